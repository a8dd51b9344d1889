package v1beta1

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ActiveProvisioningStrategy is the default provisioning strategy: the
// autoscaler keeps the buffer's capacity by scheduling placeholder pods.
const ActiveProvisioningStrategy = "buffer.x-k8s.io/active-capacity"

// Condition types of a CapacityBuffer.
const (
	// ConditionReadyForProvisioning is True when the buffer's chunk shape and
	// count are resolved and the autoscaler can provision for it.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning is True while the autoscaler keeps capacity for
	// the buffer.
	ConditionProvisioning = "Provisioning"
	// ConditionLimitedByQuotas is True when quotas cap the buffer below its
	// desired size.
	ConditionLimitedByQuotas = "LimitedByQuotas"
)

// Kinds a scalableRef may name (in the apps group).
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
)

// The marks of a buffer's virtual pods: the pods the autoscaler simulates to
// keep a buffer's room, never created in the API. They are upstream's keys, so
// that anything reading a simulation's pods (plans, explanations) can tell them.
const (
	// FakePodAnnotationKey (value FakePodAnnotationValue) marks a virtual pod.
	FakePodAnnotationKey   = "karpenter.sh/capacity-buffer-fake-pod"
	FakePodAnnotationValue = "true"
	// BufferNameAnnotation and BufferNamespaceAnnotation name the buffer a
	// virtual pod belongs to.
	BufferNameAnnotation      = "karpenter.sh/capacity-buffer-name"
	BufferNamespaceAnnotation = "karpenter.sh/capacity-buffer-namespace"
	// VirtualPodPriority is a virtual pod's priority: the lowest there is.
	VirtualPodPriority int32 = math.MinInt32
)

// CapacityBuffer asks the autoscaler to keep spare capacity for a number of
// pod-shaped chunks, so that pods arriving later do not wait for a node.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="How the buffer's capacity is kept."
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The PodTemplate a chunk is shaped like."
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="How many chunks are provisioned."
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="The types of the buffer's conditions."
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="The statuses of the buffer's conditions."
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="The reasons of the buffer's conditions."
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the CapacityBuffer was created."
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the capacity the buffer asks for.
	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// Status is what the autoscaler provisions for the buffer.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// CapacityBufferSpec is the capacity a CapacityBuffer asks for: the shape of
// one chunk (podTemplateRef or scalableRef) and how many chunks (replicas,
// percentage and/or limits).
// +kubebuilder:validation:XValidation:message="spec: a buffer with podTemplateRef also needs replicas or limits to size it",rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)"
// +kubebuilder:validation:XValidation:message="spec: podTemplateRef and scalableRef are mutually exclusive; set one of them",rule="!(has(self.podTemplateRef) && has(self.scalableRef))"
type CapacityBufferSpec struct {
	// ProvisioningStrategy is how the buffer's capacity is kept; the default,
	// buffer.x-k8s.io/active-capacity, scales the cluster up with
	// placeholder pods.
	// +kubebuilder:default:="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate in the buffer's namespace whose pod
	// is the shape of one chunk. Set this or scalableRef, not both.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names a workload with a scale subresource (a Deployment,
	// StatefulSet, ReplicaSet, ...) whose pods are the shape of one chunk.
	// Set this or podTemplateRef, not both.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is the number of chunks wanted. With percentage as well, the
	// larger of the two counts; with neither, limits alone sizes the buffer
	// (limits always cap it).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage sizes the buffer relative to scalableRef's current replicas,
	// rounded up to at least one chunk: 20 with 10 replicas is 2 chunks.
	// Only meaningful with scalableRef.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits caps the total resource requests of the buffer's chunks (e.g.
	// cpu, memory); without replicas or percentage the buffer holds as many
	// chunks as fit.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ScalableRef names a workload with a scale subresource in the buffer's
// namespace.
type ScalableRef struct {
	// APIGroup of the workload; empty for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind of the workload, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// Name of the workload.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// CapacityBufferStatus is what the autoscaler provisions for a buffer.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate the autoscaler resolved the chunk
	// shape to (the spec's, or one generated from scalableRef).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of chunks provisioned now.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the generation of the PodTemplate the status
	// was computed from.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions report the buffer's state, e.g. ReadyForProvisioning and
	// Provisioning.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// ProvisioningStrategy is the strategy the autoscaler applied.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}
