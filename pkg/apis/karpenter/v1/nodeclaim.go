package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is the Schema for the NodeClaims API. A NodeClaim is Karpenter's
// request for one node: Karpenter creates it, launches an instance for it
// through the cloud provider, waits for the node to register and initialize,
// and deletes the instance when the NodeClaim is deleted.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description=""
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",description=""
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description=""
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1,description=""
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1,description=""
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description=""
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description=""
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1,description=""
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the node requested. It cannot be changed after creation.
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// Status is the observed state of the NodeClaim and its node, written by Karpenter.
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec describes the node a NodeClaim requests.
// +kubebuilder:validation:XValidation:message="spec is immutable",rule="self == oldSelf"
type NodeClaimSpec struct {
	// Taints are applied to the node. Pods must tolerate them to be scheduled there.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied to the node at creation and are expected to be
	// removed by another component once the node is ready.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node: each is a label key, an operator and
	// values. The cloud provider launches an instance type and offering that
	// satisfies all of them.
	// +kubebuilder:validation:XValidation:message="requirements: operator 'In' needs at least one value",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements: operators 'Gt', 'Lt', 'Gte' and 'Lte' need exactly one value, a non-negative integer",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements: 'minValues' cannot exceed the number of values listed for operator 'In'",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements" hash:"ignore"`
	// Resources are the resources the node must be able to allocate to pods
	// (the pods Karpenter planned for it, plus daemonset overhead).
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty" hash:"ignore"`
	// NodeClassRef points to the cloud provider specific NodeClass that
	// configures how the node is launched.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest the node may take to drain once it
	// is being deleted; see NodePool spec.template.spec.terminationGracePeriod.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live, counted from the NodeClaim's
	// creation, before Karpenter replaces it. "Never" disables expiration.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// ResourceRequirements are the resources a NodeClaim's node must provide.
type ResourceRequirements struct {
	// Requests are the resources the node must be able to allocate.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points to a cloud provider NodeClass object.
type NodeClassReference struct {
	// Kind of the NodeClass, e.g. EC2NodeClass or KWOKNodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the NodeClass object.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.name may not be empty"
	// +required
	Name string `json:"name"`
	// Group is the API group of the NodeClass, without version, e.g. karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.group may not be empty"
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement (key,
// operator, values, as in a pod's node affinity) that may also demand a
// minimum number of distinct values to stay available, so that Karpenter
// keeps enough instance type flexibility (for example for spot).
//
// The fields mirror corev1.NodeSelectorRequirement; they are declared here so
// that the schema can validate keys, operators and values.
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="requirements key: label domain \"karpenter.sh\" is restricted",rule="self in ['karpenter.sh/capacity-type','karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')"
	// +kubebuilder:validation:XValidation:message="requirements key: label \"kubernetes.io/hostname\" is restricted",rule="self != 'kubernetes.io/hostname'"
	// +kubebuilder:validation:XValidation:message="requirements key: label domain \"karpenter.k8s.aws\" is restricted",rule="self in ['karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-capability-flex','karpenter.k8s.aws/instance-tenancy','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type','karpenter.k8s.aws/capacity-reservation-interruptible','karpenter.k8s.aws/placement-group-id','karpenter.k8s.aws/placement-group-partition','karpenter.k8s.aws/ec2nodeclass'] || !self.find('^([^/]+)').endsWith('karpenter.k8s.aws')"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist,
	// Gt, Lt, Gte or Lte (the last four compare a single integer value).
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are the label values the operator applies to. In takes one or
	// more values, NotIn any number, Gt, Lt, Gte and Lte exactly one
	// non-negative integer; Exists and DoesNotExist ignore them.
	// As in upstream's CRD, the schema does not check the values themselves;
	// the NodePool validation controller reports a value that is not a valid
	// label value (ValidationSucceeded=False).
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the minimum number of distinct values of this key that the
	// instance types Karpenter may launch must still cover (1-50). With In it
	// cannot exceed the number of values listed.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the plain corev1 form of the requirement.
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: append([]string(nil), r.Values...)}
}
