// Package capacitybuffer is what a CapacityBuffer (autoscaling.x-k8s.io/v1beta1)
// means to the autoscaler, as pure functions: how many chunks it holds
// (Replicas), the virtual pods that stand for them (VirtualPods), and what a
// provisioning decision did for it (Tally, ProvisioningCondition). Store keeps
// the resolved buffers between the buffer controller, which resolves them, and
// the provisioner, which places their virtual pods.
//
// A virtual pod is never created in the API. The provisioner solves it with the
// pending pods: placed on existing capacity, it keeps that room; placed on a
// new NodeClaim, it launches one. Cluster state remembers where each was
// placed, and the disruption controller counts it there as a pod of the node
// (see state.Cluster.SetBufferPods): a node holding buffer room is not empty,
// and consolidating it must find the room elsewhere. Virtual pods get no
// events, no nominations and no pod metrics, are not evicted and are never
// blocked by a PodDisruptionBudget.
package capacitybuffer
