package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NodeOverlay adjusts the price and extended resources the scheduler assumes
// for the instance types its requirements select.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects instance types and says how to adjust them.
	// +kubebuilder:validation:XValidation:message="spec: price and priceAdjustment are mutually exclusive; set at most one of them",rule="!has(self.price) || !has(self.priceAdjustment)"
	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// Status is the observed state of the NodeOverlay.
	// +optional
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec selects instance types and the adjustments made to them.
type NodeOverlaySpec struct {
	// Requirements select the instance types (and NodePools) the overlay
	// applies to, matched against well-known labels such as
	// node.kubernetes.io/instance-type or karpenter.sh/nodepool and against
	// the labels of a NodePool's template. Every requirement must match.
	// +kubebuilder:validation:XValidation:message="requirements: operator NotIn needs at least one value",rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements: operator In needs at least one value",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements: operators Gt, Lt, Gte and Lte need exactly one value, a non-negative integer",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// PriceAdjustment shifts the price of the selected instance types: a
	// signed amount such as "-0.5" or "+1.2", or a percentage such as "+10%"
	// (any increase) or "-15%" (a decrease of at most 100%).
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price of the selected instance types with this
	// non-negative decimal amount, e.g. "0.25".
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources (e.g. a device plugin's
	// example.com/gpu) to the nodes of the selected instance types. It adds
	// to the node's resources and cannot change cpu, memory,
	// ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:message="capacity: only extended resources may be added; cpu, memory, ephemeral-storage and pods cannot be overridden",rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that select the same instance type: the higher
	// weight wins; an overlay without a weight counts as 0, and overlays of
	// equal weight are merged by name.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is one requirement of a NodeOverlay: a label key,
// an operator and values. Besides the operators of a Pod's node affinity it
// accepts Gte and Lte.
type NodeSelectorRequirement struct {
	// Key is the label key the requirement tests.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="requirements key: label domain \"karpenter.sh\" is restricted to karpenter.sh/capacity-type and karpenter.sh/nodepool",rule="self in [\"karpenter.sh/capacity-type\", \"karpenter.sh/nodepool\"] || !self.find(\"^([^/]+)\").endsWith(\"karpenter.sh\")"
	// +kubebuilder:validation:XValidation:message="requirements key: label \"kubernetes.io/hostname\" is restricted",rule="self != \"kubernetes.io/hostname\""
	// +kubebuilder:validation:XValidation:message="requirements key: label domain \"karpenter.k8s.aws\" is restricted to the provider's well-known instance type labels",rule="self in [\"karpenter.k8s.aws/ec2nodeclass\", \"karpenter.k8s.aws/instance-encryption-in-transit-supported\", \"karpenter.k8s.aws/instance-category\", \"karpenter.k8s.aws/instance-hypervisor\", \"karpenter.k8s.aws/instance-family\", \"karpenter.k8s.aws/instance-generation\", \"karpenter.k8s.aws/instance-local-nvme\", \"karpenter.k8s.aws/instance-size\", \"karpenter.k8s.aws/instance-cpu\", \"karpenter.k8s.aws/instance-cpu-manufacturer\", \"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz\", \"karpenter.k8s.aws/instance-memory\", \"karpenter.k8s.aws/instance-ebs-bandwidth\", \"karpenter.k8s.aws/instance-network-bandwidth\", \"karpenter.k8s.aws/instance-gpu-name\", \"karpenter.k8s.aws/instance-gpu-manufacturer\", \"karpenter.k8s.aws/instance-gpu-count\", \"karpenter.k8s.aws/instance-gpu-memory\", \"karpenter.k8s.aws/instance-accelerator-name\", \"karpenter.k8s.aws/instance-accelerator-manufacturer\", \"karpenter.k8s.aws/instance-accelerator-count\", \"karpenter.k8s.aws/instance-capability-flex\"] || !self.find(\"^([^/]+)\").endsWith(\"karpenter.k8s.aws\")"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists,
	// DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum:=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator,omitempty"`
	// Values are the label values: at least one for In and NotIn, none for
	// Exists and DoesNotExist, and a single non-negative integer for Gt, Lt,
	// Gte and Lte.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// ConditionTypeValidationSucceeded is True when the NodeOverlay passed the
// controller's validation beyond the CRD schema.
const ConditionTypeValidationSucceeded = "ValidationSucceeded"

// NodeOverlayStatus is the observed state of a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions are the conditions of the NodeOverlay; Ready is True when it
	// is valid and applied.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}

var nodeOverlayConditions = status.NewReadyConditions(ConditionTypeValidationSucceeded)

// StatusConditions returns the accessor of the NodeOverlay's conditions.
func (in *NodeOverlay) StatusConditions() status.ConditionSet {
	return nodeOverlayConditions.For(in)
}

// GetConditions returns the NodeOverlay's conditions.
func (in *NodeOverlay) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions replaces the NodeOverlay's conditions.
func (in *NodeOverlay) SetConditions(c []status.Condition) { in.Status.Conditions = c }

var _ status.Object = &NodeOverlay{}
