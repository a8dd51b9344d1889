package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NodeClaim is the v1beta1 form of a NodeClaim, Karpenter's request for one node.
// +kubebuilder:object:root=true
// +kubebuilder:unservedversion
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description=""
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description=""
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",priority=1,description=""
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description=""
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description=""
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the node requested.
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// Status is the observed state of the NodeClaim and its node.
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

// NodeClaimSpec describes the node a v1beta1 NodeClaim (or NodePool template) requests.
type NodeClaimSpec struct {
	// Taints are applied to the node. Pods must tolerate them to be scheduled there.
	// +kubebuilder:validation:XValidation:message="taints: effect must be one of NoSchedule, PreferNoSchedule, NoExecute",rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])"
	// +kubebuilder:validation:XValidation:message="taints: key must not be empty",rule="self.all(x, x.key != '')"
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied to the node at creation and are expected to be
	// removed by another component once the node is ready.
	// +kubebuilder:validation:XValidation:message="startupTaints: effect must be one of NoSchedule, PreferNoSchedule, NoExecute",rule="self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])"
	// +kubebuilder:validation:XValidation:message="startupTaints: key must not be empty",rule="self.all(x, x.key != '')"
	// +kubebuilder:validation:MaxItems=100
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node: each is a label key, an operator and values.
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements" hash:"ignore"`
	// Resources are the resources the node must be able to allocate to pods.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty" hash:"ignore"`
	// Kubelet configures the kubelet of the node. v1 moved these settings to
	// the NodeClass (e.g. EC2NodeClass spec.kubelet).
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// NodeClassRef points to the cloud provider specific NodeClass.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
}

// ResourceRequirements are the resources a NodeClaim's node must provide.
type ResourceRequirements struct {
	// Requests are the resources the node must be able to allocate.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points to a cloud provider NodeClass object by apiVersion, kind and name.
type NodeClassReference struct {
	// Kind of the NodeClass, e.g. EC2NodeClass. Defaults to the provider's NodeClass kind.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the NodeClass object.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.name may not be empty"
	// +required
	Name string `json:"name"`
	// APIVersion of the NodeClass, e.g. karpenter.k8s.aws/v1beta1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// KubeletConfiguration is the kubelet configuration of v1beta1 NodePools and
// NodeClaims. Unset fields keep the kubelet's (or AMI's) defaults.
// +kubebuilder:validation:XValidation:message="kubelet: imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",rule="has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"
// +kubebuilder:validation:XValidation:message="kubelet: evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",rule="has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true"
// +kubebuilder:validation:XValidation:message="kubelet: evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",rule="has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true"
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs pods use.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods is the maximum number of pods on the node.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per CPU core; the smaller of this and MaxPods applies.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved reserves resources (cpu, memory, ephemeral-storage, pid) for OS daemons.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:message="kubelet: valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="kubelet: systemReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved reserves resources (cpu, memory, ephemeral-storage, pid) for Kubernetes daemons.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:message="kubelet: valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="kubelet: kubeReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard are the hard eviction thresholds, e.g. memory.available: 5%.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:message="kubelet: valid keys for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are the soft eviction thresholds; each needs a grace period.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:message="kubelet: valid keys for evictionSoft are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is how long each soft threshold must be exceeded before eviction.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:message="kubelet: valid keys for evictionSoftGracePeriod are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period, in seconds, given
	// to pods evicted for a soft threshold.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage above which image garbage collection always runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage below which image garbage collection never runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enables CPU CFS quota enforcement for containers with CPU limits.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// NodeClaimStatus is the observed state of a v1beta1 NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the ID of the machine image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the total resources of the instance.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the resources available to pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions are the lifecycle conditions of the NodeClaim.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}
