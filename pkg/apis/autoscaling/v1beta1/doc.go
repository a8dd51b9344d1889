// Package v1beta1 contains the autoscaling.x-k8s.io/v1beta1 API:
// CapacityBuffer, the shared buffer API of Kubernetes node autoscalers.
//
// A CapacityBuffer asks the autoscaler to keep room in the cluster for a
// number of "chunks", each shaped like a pod from a PodTemplate or from the
// pods of a scalable workload, so that new pods start without waiting for a
// node. Karpenter stores CapacityBuffers so that objects created for upstream
// Karpenter survive an upgrade or a switch; until buffers are built no
// capacity is kept for them, and the controller says so at start-up (see
// pkg/operator).
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
