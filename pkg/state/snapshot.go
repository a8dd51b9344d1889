package state

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func resourceCount(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// Snapshot fills a solver input for the given pending pods: existing and in-flight
// capacity with the pods bound to it, the pod each DaemonSet would run on a new
// node (DaemonSetPods), namespace labels and the volumes the pods use. NodePools
// and Options are the caller's. Capacity being deleted is left out: its pods come back as pending pods.
//
// Everything comes from state's own copies, which the informer controllers keep
// (see package informer): a snapshot never reads the API, so it costs no request
// and cannot fail. ctx and the error are kept for the callers' sake.
func (c *Cluster) Snapshot(_ context.Context, pods []*corev1.Pod) (*scheduling.Input, error) {
	in := &scheduling.Input{Pods: pods}
	for _, sn := range c.Nodes() {
		if sn.MarkedForDeletion() {
			continue
		}
		in.ExistingNodes = append(in.ExistingNodes, &scheduling.ExistingNode{
			Name:          sn.Name(),
			Labels:        sn.Labels(),
			Taints:        sn.Taints(),
			StartupTaints: sn.StartupTaints(),
			Allocatable:   sn.Allocatable(),
			Pods:          sn.Pods,
			Initialized:   sn.Initialized(),
			InFlight:      sn.InFlight(),
			NodePool:      sn.NodePool(),
		})
	}
	in.DaemonSetPods = c.DaemonSetPods()
	c.mu.RLock()
	defer c.mu.RUnlock()
	in.Namespaces = c.namespaceLabels()
	c.volumes(in)
	return in, nil
}

// PodsOnDeletingCapacity returns the non-DaemonSet pods bound to nodes being
// deleted: they need a new home and are provisioned for along with pending pods.
func (c *Cluster) PodsOnDeletingCapacity() []*corev1.Pod {
	var out []*corev1.Pod
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, sn := range c.nodesLocked(false) {
		if !sn.MarkedForDeletion() {
			continue
		}
		// Only these nodes' pods are wanted: the node's own name, or the one its
		// NodeClaim expects before the Node is seen (as Nodes joins them).
		name := ""
		if sn.Node != nil {
			name = sn.Node.Name
		} else if sn.NodeClaim != nil {
			name = sn.NodeClaim.Status.NodeName
		}
		if name == "" {
			continue
		}
		for _, p := range c.podsOn(name) {
			if p.DeletionTimestamp != nil || scheduling.OwnedByDaemonSet(p) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}
