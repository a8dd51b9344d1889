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
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description=""
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes",description=""
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
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="replicas cannot be added to or removed from an existing NodePool: a NodePool is static (replicas set) or dynamic (replicas unset) for its whole life; create a new NodePool instead"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))",message="limits: a static NodePool (replicas set) supports only limits.nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="weight: a static NodePool (replicas set) has no weight, remove weight or replicas"
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
	// Replicas makes the NodePool static: Karpenter keeps exactly this many
	// nodes, whatever the pods need, instead of launching for pending pods.
	// A NodePool is static or dynamic for its whole life. Static NodePools take
	// effect with the StaticCapacity feature gate; without it (the default) a
	// static NodePool launches nothing, as upstream's, and its
	// ValidationSucceeded condition says so.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// Limits are upper bounds on the summed capacity of a NodePool's nodes.
type Limits corev1.ResourceList

// ConsolidationPolicy selects which nodes consolidation may remove.
// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized,Balanced}
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty only removes nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized removes empty nodes and
	// replaces or removes nodes whose pods fit elsewhere more cheaply.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced removes empty nodes and consolidates
	// underutilized ones only when the share of the NodePool's cost a move
	// saves is at least 1/BalancedK of the share of its disruption the move
	// causes.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// BalancedK is the Balanced policy's k: a move is taken at a score (savings
// fraction over disruption fraction) of 1/k or more.
const BalancedK int32 = 2

// StaticGateOff says what a static NodePool does while the StaticCapacity
// feature gate is off.
const StaticGateOff = "the StaticCapacity feature gate is off: a static NodePool launches no node and pending pods are not provisioned on it, as upstream's"

// DisruptionReason names why Karpenter disrupts a node; budgets may apply to
// a subset of reasons.
// +kubebuilder:validation:Enum:={Underutilized,Empty,Drifted,Unhealthy}
type DisruptionReason string

const (
	// DisruptionReasonUnderutilized is consolidation of a node whose pods fit elsewhere.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonEmpty is removal of a node without workload pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonDrifted is replacement of a node that no longer matches its NodePool or NodeClass.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
	// DisruptionReasonUnhealthy is replacement of a node that failed a health
	// check (node repair).
	DisruptionReasonUnhealthy DisruptionReason = "Unhealthy"
)

// Disruption configures voluntary disruption of a NodePool's nodes.
type Disruption struct {
	// ConsolidateAfter is how long a node must have had no pod scheduled to or
	// removed from it before consolidation may consider it. "Never" turns
	// consolidation off for this NodePool. Defaults to 0s.
	// +kubebuilder:default:="0s"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitempty"`
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
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty" hash:"ignore"`
}

// Budget caps the number of nodes that may be disrupted at the same time,
// optionally only during a recurring window and for some reasons.
type Budget struct {
	// Reasons lists the disruption reasons this budget applies to. When
	// omitted, it applies to every reason.
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the maximum number of nodes that may be disrupted at once,
	// either a count ("5") or a percentage of the NodePool's nodes ("10%",
	// rounded up).
	// +kubebuilder:validation:Pattern:="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression, evaluated in UTC, at which the budget
	// becomes active; it stays active for Duration. Five fields (minute hour
	// day-of-month month day-of-week; numbers, names such as mon or jan, "*",
	// ranges, lists and steps such as "0 9 * * mon-fri" or "*/30 * * * *") or
	// one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.
	// Must be set together with duration.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty" hash:"ignore"`
	// Duration is how long the budget stays active after each schedule hit,
	// in hours and minutes (e.g. "1h30m"). Must be set together with schedule.
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
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
	// +kubebuilder:validation:XValidation:message="labels: label \"karpenter.sh/nodepool\" is restricted, Karpenter sets it",rule="self.all(x, x != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"karpenter.sh\" is restricted",rule="self.all(x, x in ['karpenter.sh/capacity-type','karpenter.sh/nodepool'] || !x.find('^([^/]+)').endsWith('karpenter.sh'))"
	// +kubebuilder:validation:XValidation:message="labels: label \"kubernetes.io/hostname\" is restricted",rule="self.all(x, x != 'kubernetes.io/hostname')"
	// +kubebuilder:validation:XValidation:message="labels: label domain \"karpenter.k8s.aws\" is restricted",rule="self.all(x, x in ['karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-capability-flex','karpenter.k8s.aws/instance-tenancy','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type','karpenter.k8s.aws/capacity-reservation-interruptible','karpenter.k8s.aws/placement-group-id','karpenter.k8s.aws/placement-group-partition','karpenter.k8s.aws/ec2nodeclass'] || !x.find('^([^/]+)').endsWith('karpenter.k8s.aws'))"
	// +mapType=atomic
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are applied to every NodeClaim and node of the NodePool.
	// +mapType=granular
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec of a NodeClaim template. It is the
// NodeClaim spec without resources, which Karpenter computes per NodeClaim.
type NodeClaimTemplateSpec struct {
	// Taints are applied to every node of the NodePool. Pods must tolerate
	// them to be scheduled there.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied when a node is created and are expected to be
	// removed by another component (e.g. a CNI or device plugin) once the node
	// is ready. Karpenter ignores them when deciding whether pods fit, and a
	// node is not initialized until they are gone.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes of the NodePool: each is a label key, an
	// operator and values, as in a pod's node affinity. They are combined with
	// the template labels and with each pod's own requirements.
	// +kubebuilder:validation:XValidation:message="requirements: label \"karpenter.sh/nodepool\" is restricted, Karpenter sets it",rule="self.all(x, x.key != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="requirements: operator 'In' needs at least one value",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements: operators 'Gt', 'Lt', 'Gte' and 'Lte' need exactly one value, a non-negative integer",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements: 'minValues' cannot exceed the number of values listed for operator 'In'",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
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
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before Karpenter replaces it,
	// counted from its NodeClaim's creation. Expiration is forceful: it does not
	// wait for disruption budgets. "Never" disables expiration.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}
