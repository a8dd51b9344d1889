package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Provisioner is the legacy (v1alpha5) predecessor of NodePool.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=provisioners,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.providerRef.name",description=""
// +kubebuilder:printcolumn:name="Weight",type="string",JSONPath=".spec.weight",priority=1,description=""
type Provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Provisioner.
	// +optional
	Spec ProvisionerSpec `json:"spec,omitempty"`
	// Status is the observed state of the Provisioner.
	// +optional
	Status ProvisionerStatus `json:"status,omitempty"`
}

// ProvisionerList is a list of Provisioners.
// +kubebuilder:object:root=true
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provisioner `json:"items"`
}

// ProvisionerSpec is the desired state of a Provisioner.
// +kubebuilder:validation:XValidation:message="ttlSecondsAfterEmpty and consolidation.enabled are mutually exclusive",rule="!(has(self.ttlSecondsAfterEmpty) && has(self.consolidation) && has(self.consolidation.enabled) && self.consolidation.enabled)"
// +kubebuilder:validation:XValidation:message="provider and providerRef are mutually exclusive",rule="!(has(self.provider) && has(self.providerRef))"
type ProvisionerSpec struct {
	// Annotations are applied to every node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are applied to every node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are applied to every node.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied to every node at creation and expected to be removed by another component.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes the Provisioner launches.
	// +optional
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// KubeletConfiguration configures the kubelet of every node.
	// +optional
	KubeletConfiguration *KubeletConfiguration `json:"kubeletConfiguration,omitempty"`
	// Provider is the inline, cloud provider specific configuration (e.g. an
	// AWS provider block); replaced by providerRef.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Provider *runtime.RawExtension `json:"provider,omitempty"`
	// ProviderRef points to a provider node template (e.g. an AWSNodeTemplate).
	// +optional
	ProviderRef *MachineTemplateRef `json:"providerRef,omitempty"`
	// TTLSecondsAfterEmpty is how long, in seconds, a node may stay empty before it is deleted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterEmpty *int64 `json:"ttlSecondsAfterEmpty,omitempty"`
	// TTLSecondsUntilExpired is how long, in seconds, a node may live before it is replaced.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsUntilExpired *int64 `json:"ttlSecondsUntilExpired,omitempty"`
	// Limits caps the resources the Provisioner may launch.
	// +optional
	Limits *Limits `json:"limits,omitempty"`
	// Weight is the priority of this Provisioner over others (1-100).
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Consolidation configures consolidation of the Provisioner's nodes.
	// +optional
	Consolidation *Consolidation `json:"consolidation,omitempty"`
}

// MachineTemplateRef points to a provider node template.
type MachineTemplateRef struct {
	// Kind of the referent.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the referent.
	// +required
	Name string `json:"name"`
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// Limits caps the resources a Provisioner may launch.
type Limits struct {
	// Resources are the upper bounds on the summed node capacity.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// Consolidation configures consolidation.
type Consolidation struct {
	// Enabled turns consolidation on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// KubeletConfiguration is the v1alpha5 kubelet configuration.
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs pods use.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ContainerRuntime selected the container runtime (dockerd or containerd).
	// +optional
	ContainerRuntime *string `json:"containerRuntime,omitempty"`
	// MaxPods is the maximum number of pods on the node.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per CPU core.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved reserves resources for OS daemons.
	// +optional
	SystemReserved corev1.ResourceList `json:"systemReserved,omitempty"`
	// KubeReserved reserves resources for Kubernetes daemons.
	// +optional
	KubeReserved corev1.ResourceList `json:"kubeReserved,omitempty"`
	// EvictionHard are the hard eviction thresholds.
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are the soft eviction thresholds.
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is the grace period of each soft threshold.
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period, in seconds, for soft evictions.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage above which image GC always runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage below which image GC never runs.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enables CPU CFS quota enforcement.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// ProvisionerStatus is the observed state of a Provisioner.
type ProvisionerStatus struct {
	// LastScaleTime is the last time the Provisioner launched a node.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// Conditions are the conditions of the Provisioner.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
	// Resources is the sum of the capacity of the Provisioner's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// Condition is a v1alpha5 status condition (the knative shape, with severity).
type Condition struct {
	// Type of the condition.
	// +required
	Type string `json:"type"`
	// Status of the condition, one of True, False, Unknown.
	// +required
	Status corev1.ConditionStatus `json:"status"`
	// Severity with which to treat failures of this condition.
	// +optional
	Severity string `json:"severity,omitempty"`
	// LastTransitionTime is the last time the condition changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human readable message about the transition.
	// +optional
	Message string `json:"message,omitempty"`
}
