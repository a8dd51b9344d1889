package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is the Schema for the NodePools API. A NodePool describes a group
// of nodes Karpenter may launch: the constraints every node satisfies (its
// template), how Karpenter may disrupt them, how much it may launch in total
// (limits) and its priority against other NodePools (weight).
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description=""
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.resources.nodes",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description=""
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description=""
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the nodes this NodePool may create and how they are disrupted.
	// +required
	Spec NodePoolSpec `json:"spec"`
	// Status is the observed state of the NodePool, written by Karpenter.
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired state of a NodePool.
type NodePoolSpec struct {
	// Template is the template of the NodeClaims this NodePool creates. Every
	// node launched for the NodePool carries its labels, annotations, taints and
	// satisfies its requirements.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls how and when Karpenter may voluntarily remove nodes
	// of this NodePool (consolidation and drift), and how many at a time.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits caps the total resources of all nodes in this NodePool. Karpenter
	// launches no node that would push the sum of node capacities past a limit.
	// Any resource name may be limited, including "nodes".
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight is the priority of this NodePool over others (1-100). When several
	// NodePools fit a pod, the one with the highest weight is tried first.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Limits are upper bounds on the summed capacity of a NodePool's nodes.
type Limits corev1.ResourceList

// ConsolidationPolicy selects which nodes consolidation may remove.
// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized}
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty only removes nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized removes empty nodes and
	// replaces or removes nodes whose pods fit elsewhere more cheaply.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
)

// DisruptionReason names why Karpenter disrupts a node; budgets may apply to
// a subset of reasons.
// +kubebuilder:validation:Enum:={Underutilized,Empty,Drifted}
type DisruptionReason string

const (
	// DisruptionReasonUnderutilized is consolidation of a node whose pods fit elsewhere.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonEmpty is removal of a node without workload pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonDrifted is replacement of a node that no longer matches its NodePool or NodeClass.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
)

// Disruption configures voluntary disruption of a NodePool's nodes.
type Disruption struct {
	// ConsolidateAfter is how long a node must have had no pod scheduled to or
	// removed from it before consolidation may consider it. "Never" turns
	// consolidation off for this NodePool.
	// +kubebuilder:validation:XValidation:message="consolidateAfter must be a duration in hours, minutes and seconds such as 30s, 5m, 1h or 1h30m, or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +required
	ConsolidateAfter NillableDuration `json:"consolidateAfter"`
	// ConsolidationPolicy selects the nodes consolidation may act on:
	// WhenEmpty (only nodes without workload pods) or WhenEmptyOrUnderutilized
	// (also nodes whose pods can be moved to cheaper capacity).
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets limit how many of the NodePool's nodes may be disrupted at once.
	// When several budgets are active, the most restrictive one applies. A
	// budget without reasons applies to every reason. Budgets do not limit
	// forceful disruption such as expiration.
	// +kubebuilder:validation:XValidation:message="budgets: 'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty" hash:"ignore"`
}

// Budget caps the number of nodes that may be disrupted at the same time,
// optionally only during a recurring window and for some reasons.
type Budget struct {
	// Reasons lists the disruption reasons this budget applies to. When
	// omitted, it applies to every reason.
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the maximum number of nodes that may be disrupted at once,
	// either a count ("5") or a percentage of the NodePool's nodes ("10%",
	// rounded up).
	// +kubebuilder:validation:XValidation:message="nodes must be a count of nodes such as 5, or a percentage of the NodePool's nodes from 0% to 100% such as 10%",rule="self.matches('^((100|[0-9]{1,2})%|[0-9]+)$')"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression, evaluated in UTC, at which the budget
	// becomes active; it stays active for Duration. Five fields (minute hour
	// day-of-month month day-of-week; numbers, names such as mon or jan, "*",
	// ranges, lists and steps such as "0 9 * * mon-fri" or "*/30 * * * *") or
	// one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.
	// Must be set together with duration.
	// +kubebuilder:validation:XValidation:message="schedule must be a cron expression of 5 fields separated by spaces: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec) day-of-week (0-6 or sun-sat); each field is *, a number, a range a-b, a list a,b,c or a step */n or a-b/n with n above 0 (? may stand for * in the two day fields); or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly. Example: 0 9 * * mon-fri",rule="self.matches('^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/0*[1-9][0-9]*)?(,([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/0*[1-9][0-9]*)?)* ([*]|(2[0-3]|1[0-9]|0?[0-9])(-(2[0-3]|1[0-9]|0?[0-9]))?)(/0*[1-9][0-9]*)?(,([*]|(2[0-3]|1[0-9]|0?[0-9])(-(2[0-3]|1[0-9]|0?[0-9]))?)(/0*[1-9][0-9]*)?)* (([*]|(3[01]|[12][0-9]|0?[1-9])(-(3[01]|[12][0-9]|0?[1-9]))?)(/0*[1-9][0-9]*)?(,([*]|(3[01]|[12][0-9]|0?[1-9])(-(3[01]|[12][0-9]|0?[1-9]))?)(/0*[1-9][0-9]*)?)*|[?]) ([*]|(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?(,([*]|(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?)* (([*]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?(,([*]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?)*|[?]))$')"
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Schedule *string `json:"schedule,omitempty" hash:"ignore"`
	// Duration is how long the budget stays active after each schedule hit,
	// in hours and minutes (e.g. "1h30m"). Must be set together with schedule.
	// +kubebuilder:validation:XValidation:message="duration must be hours and/or minutes such as 30m, 8h or 1h30m (no seconds)",rule="self.matches('^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty" hash:"ignore"`
}

// NodeClaimTemplate is the template of the NodeClaims a NodePool creates.
type NodeClaimTemplate struct {
	// ObjectMeta holds the labels and annotations copied onto each NodeClaim and node.
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty"`
	// Spec is the NodeClaim spec each new NodeClaim starts from.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the subset of object metadata a NodeClaim template may set.
type ObjectMeta struct {
	// Labels are applied to every NodeClaim and node of the NodePool, and are
	// matched against pod node selectors and affinities. Values are at most 63
	// alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:message="labels: keys must be qualified names (optional DNS prefix and '/', then at most 63 alphanumerics, '-', '_' or '.')",rule="self.all(x, x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))"
	// +kubebuilder:validation:XValidation:message="labels: label \"karpenter.sh/nodepool\" is restricted, Karpenter sets it",rule="self.all(x, x != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"kubernetes.io\" is restricted",rule="self.all(x, x in ['beta.kubernetes.io/instance-type','failure-domain.beta.kubernetes.io/region','beta.kubernetes.io/os','beta.kubernetes.io/arch','failure-domain.beta.kubernetes.io/zone','topology.kubernetes.io/zone','topology.kubernetes.io/region','node.kubernetes.io/instance-type','kubernetes.io/arch','kubernetes.io/os','node.kubernetes.io/windows-build'] || x.find('^([^/]+)').endsWith('node.kubernetes.io') || x.find('^([^/]+)').endsWith('node-restriction.kubernetes.io') || !x.find('^([^/]+)').endsWith('kubernetes.io'))"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"k8s.io\" is restricted",rule="self.all(x, x.find('^([^/]+)').endsWith('kops.k8s.io') || !x.find('^([^/]+)').endsWith('k8s.io'))"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"karpenter.sh\" is restricted",rule="self.all(x, x in ['karpenter.sh/capacity-type','karpenter.sh/nodepool'] || !x.find('^([^/]+)').endsWith('karpenter.sh'))"
	// +kubebuilder:validation:XValidation:message="labels: label \"kubernetes.io/hostname\" is restricted",rule="self.all(x, x != 'kubernetes.io/hostname')"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"karpenter.k8s.aws\" is restricted",rule="self.all(x, x in ['karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-capability-flex','karpenter.k8s.aws/instance-tenancy','karpenter.k8s.aws/nitro-sandbox','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type','karpenter.k8s.aws/capacity-reservation-interruptible','karpenter.k8s.aws/placement-group-id','karpenter.k8s.aws/placement-group-partition','karpenter.k8s.aws/ec2nodeclass'] || !x.find('^([^/]+)').endsWith('karpenter.k8s.aws'))"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are applied to every NodeClaim and node of the NodePool.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec of a NodeClaim template. It is the
// NodeClaim spec without resources, which Karpenter computes per NodeClaim.
type NodeClaimTemplateSpec struct {
	// Taints are applied to every node of the NodePool. Pods must tolerate
	// them to be scheduled there.
	// +kubebuilder:validation:XValidation:message="taints: effect must be one of NoSchedule, PreferNoSchedule, NoExecute",rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])"
	// +kubebuilder:validation:XValidation:message="taints: key must not be empty",rule="self.all(x, x.key != '')"
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied when a node is created and are expected to be
	// removed by another component (e.g. a CNI or device plugin) once the node
	// is ready. Karpenter ignores them when deciding whether pods fit, and a
	// node is not initialized until they are gone.
	// +kubebuilder:validation:XValidation:message="startupTaints: effect must be one of NoSchedule, PreferNoSchedule, NoExecute",rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])"
	// +kubebuilder:validation:XValidation:message="startupTaints: key must not be empty",rule="self.all(x, x.key != '')"
	// +kubebuilder:validation:MaxItems=100
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes of the NodePool: each is a label key, an
	// operator and values, as in a pod's node affinity. They are combined with
	// the template labels and with each pod's own requirements.
	// +kubebuilder:validation:XValidation:message="requirements: label \"karpenter.sh/nodepool\" is restricted, Karpenter sets it",rule="self.all(x, x.key != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements" hash:"ignore"`
	// NodeClassRef points to the cloud provider specific NodeClass (e.g. an
	// EC2NodeClass) that configures how nodes are launched.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group is immutable"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind is immutable"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest a node may take to drain once it is
	// being deleted. When it runs out, remaining pods are deleted even if a
	// PodDisruptionBudget or the karpenter.sh/do-not-disrupt annotation would
	// block them, and each pod is deleted early enough to get its own
	// terminationGracePeriodSeconds before the deadline. Unset means no limit.
	// +kubebuilder:validation:XValidation:message="terminationGracePeriod must be a duration in hours, minutes and seconds such as 30s, 10m or 48h (Never is not allowed)",rule="self.matches('^([0-9]+(s|m|h))+$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before Karpenter replaces it,
	// counted from its NodeClaim's creation. Expiration is forceful: it does not
	// wait for disruption budgets. "Never" disables expiration.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:XValidation:message="expireAfter must be a duration in hours, minutes and seconds such as 720h or 24h30m, or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}
