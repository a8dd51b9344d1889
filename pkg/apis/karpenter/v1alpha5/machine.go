package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Machine is the legacy (v1alpha5) predecessor of NodeClaim.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machines,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description=""
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description=""
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",priority=1,description=""
// +kubebuilder:printcolumn:name="Provisioner",type="string",JSONPath=".metadata.labels.karpenter\\.sh/provisioner-name",priority=1,description=""
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.machineTemplateRef.name",priority=1,description=""
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the node requested.
	// +optional
	Spec MachineSpec `json:"spec,omitempty"`
	// Status is the observed state of the Machine.
	// +optional
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}

// MachineSpec describes the node a Machine requests.
type MachineSpec struct {
	// Taints are applied to the node.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied to the node at creation and expected to be removed by another component.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node.
	// +optional
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// Resources are the resources the node must provide.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// Kubelet configures the kubelet of the node.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// MachineTemplateRef points to the provider node template.
	// +optional
	MachineTemplateRef *MachineTemplateRef `json:"machineTemplateRef,omitempty"`
}

// ResourceRequirements are the resources a Machine's node must provide.
type ResourceRequirements struct {
	// Requests are the resources the node must be able to allocate.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// MachineStatus is the observed state of a Machine.
type MachineStatus struct {
	// NodeName is the name of the Node registered for this Machine.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// Capacity is the total resources of the instance.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the resources available to pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions are the lifecycle conditions of the Machine.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
}
