package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NillableDuration is a duration that may be "Never"; see v1.NillableDuration.
type NillableDuration = v1.NillableDuration

// NodeSelectorRequirementWithMinValues is a requirement with an optional
// minimum number of values; v1beta1 and v1 share its schema.
type NodeSelectorRequirementWithMinValues = v1.NodeSelectorRequirementWithMinValues

// ObjectMeta is the labels and annotations of a NodeClaim template; v1beta1
// and v1 share its schema.
type ObjectMeta = v1.ObjectMeta

// NodePool is the v1beta1 form of a NodePool: the template, disruption
// settings, limits and weight of a group of nodes Karpenter may launch.
// +kubebuilder:object:root=true
// +kubebuilder:unservedversion
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description=""
// +kubebuilder:printcolumn:name="Weight",type="string",JSONPath=".spec.weight",priority=1,description=""
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

// NodePoolSpec is the desired state of a v1beta1 NodePool.
type NodePoolSpec struct {
	// Template is the template of the NodeClaims this NodePool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls consolidation, expiration and disruption budgets.
	// +kubebuilder:default:={"consolidationPolicy": "WhenUnderutilized", "expireAfter": "720h"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits caps the total resources of all nodes in this NodePool.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight is the priority of this NodePool over others (1-100).
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Limits are upper bounds on the summed capacity of a NodePool's nodes.
type Limits corev1.ResourceList

// ConsolidationPolicy selects which nodes consolidation may remove.
// +kubebuilder:validation:Enum:={WhenEmpty,WhenUnderutilized}
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty only removes nodes without workload pods,
	// once they have been empty for consolidateAfter.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenUnderutilized removes or replaces nodes whose
	// pods fit elsewhere more cheaply, and empty nodes.
	ConsolidationPolicyWhenUnderutilized ConsolidationPolicy = "WhenUnderutilized"
)

// Disruption configures disruption of a v1beta1 NodePool's nodes.
// +kubebuilder:validation:XValidation:message="consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized",rule="has(self.consolidateAfter) ? self.consolidationPolicy != 'WhenUnderutilized' || self.consolidateAfter == 'Never' : true"
// +kubebuilder:validation:XValidation:message="consolidateAfter must be specified with consolidationPolicy=WhenEmpty",rule="self.consolidationPolicy == 'WhenEmpty' ? has(self.consolidateAfter) : true"
type Disruption struct {
	// ConsolidateAfter is how long a node must be empty before WhenEmpty
	// consolidation removes it. "Never" disables consolidation.
	// +kubebuilder:validation:XValidation:message="consolidateAfter must be a duration in hours, minutes and seconds such as 30s, 5m, 1h or 1h30m, or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ConsolidateAfter *NillableDuration `json:"consolidateAfter,omitempty"`
	// ConsolidationPolicy selects the nodes consolidation may act on:
	// WhenEmpty or WhenUnderutilized.
	// +kubebuilder:default:=WhenUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// ExpireAfter is how long a node may live before Karpenter replaces it.
	// "Never" disables expiration.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:XValidation:message="expireAfter must be a duration in hours, minutes and seconds such as 720h or 24h30m, or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
	// Budgets limit how many of the NodePool's nodes may be disrupted at once.
	// +kubebuilder:validation:XValidation:message="budgets: 'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty" hash:"ignore"`
}

// Budget caps the number of nodes that may be disrupted at once, optionally
// only during a recurring window.
type Budget struct {
	// Nodes is the maximum number of nodes that may be disrupted at once, a
	// count ("5") or a percentage of the NodePool's nodes ("10%").
	// +kubebuilder:validation:XValidation:message="nodes must be a count of nodes such as 5, or a percentage of the NodePool's nodes from 0% to 100% such as 10%",rule="self.matches('^((100|[0-9]{1,2})%|[0-9]+)$')"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC) at which the budget becomes active;
	// it stays active for Duration. Must be set together with duration.
	// +kubebuilder:validation:XValidation:message="schedule must be a cron expression of 5 fields separated by spaces: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec) day-of-week (0-6 or sun-sat); each field is *, a number, a range a-b, a list a,b,c or a step */n or a-b/n with n above 0 (? may stand for * in the two day fields); or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly. Example: 0 9 * * mon-fri",rule="self.matches('^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/0*[1-9][0-9]*)?(,([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/0*[1-9][0-9]*)?)* ([*]|(2[0-3]|1[0-9]|0?[0-9])(-(2[0-3]|1[0-9]|0?[0-9]))?)(/0*[1-9][0-9]*)?(,([*]|(2[0-3]|1[0-9]|0?[0-9])(-(2[0-3]|1[0-9]|0?[0-9]))?)(/0*[1-9][0-9]*)?)* (([*]|(3[01]|[12][0-9]|0?[1-9])(-(3[01]|[12][0-9]|0?[1-9]))?)(/0*[1-9][0-9]*)?(,([*]|(3[01]|[12][0-9]|0?[1-9])(-(3[01]|[12][0-9]|0?[1-9]))?)(/0*[1-9][0-9]*)?)*|[?]) ([*]|(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?(,([*]|(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(1[0-2]|0?[1-9]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?)* (([*]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?(,([*]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?)*|[?]))$')"
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Schedule *string `json:"schedule,omitempty" hash:"ignore"`
	// Duration is how long the budget stays active after each schedule hit.
	// +kubebuilder:validation:XValidation:message="duration must be hours and/or minutes such as 30m, 8h or 1h30m (no seconds)",rule="self.matches('^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$')"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty" hash:"ignore"`
}

// NodeClaimTemplate is the template of the NodeClaims a NodePool creates.
// +kubebuilder:validation:XValidation:message="requirements: label \"karpenter.sh/nodepool\" is restricted, Karpenter sets it",rule="self.spec.requirements.all(x, x.key != 'karpenter.sh/nodepool')"
type NodeClaimTemplate struct {
	// ObjectMeta holds the labels and annotations copied onto each NodeClaim and node.
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty"`
	// Spec is the NodeClaim spec each new NodeClaim starts from.
	// +required
	Spec NodeClaimSpec `json:"spec"`
}

// NodePoolStatus is the observed state of a v1beta1 NodePool.
type NodePoolStatus struct {
	// Resources is the sum of the capacity of the NodePool's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Conditions are the conditions of the NodePool.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}
