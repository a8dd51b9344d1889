// Package snapshot holds what kubectl-karpenter plans over: the objects
// Karpenter's controllers read (NodePools, NodeClaims, NodeClasses, Nodes,
// Pods, DaemonSets, PodDisruptionBudgets, Deployments, namespaces, volumes),
// taken from a live cluster with list calls only or from a dump made by
// `kubectl get ... -o yaml`, then edited in memory (manifests applied,
// objects deleted, Deployments scaled).
//
// It serves those objects through a read-only client.Client (Store) and
// feeds them into a state.Cluster exactly as the informers would, so the
// controller's own code (the provisioner's solver input, the disruption
// controller's snapshot) runs on it unchanged. Nothing here can write to a
// cluster: the live path's transport refuses every verb but GET.
package snapshot
