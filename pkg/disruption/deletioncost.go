package disruption

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Pod deletion cost (the PodDeletionCostManagement gate), as upstream v1.15
// ranks nodes for it: when a ReplicaSet scales in, its controller deletes the
// pods with the lowest controller.kubernetes.io/pod-deletion-cost first.
// Karpenter writes that annotation so that scale-ins empty the nodes it would
// disrupt next, and consolidation then has less to move.

// DeletionCostRanking says what each managed node's ReplicaSet pods get.
type DeletionCostRanking struct {
	// GoingAway are being deleted or disrupted: math.MinInt32.
	GoingAway []*Node
	// Ranked are the nodes disruption would take next, drifted ones first,
	// then by price per unit of disruption, highest first, each NodePool's
	// within its budget for the reason: the i-th of n gets i-n (the first
	// -n, the last -1).
	Ranked []*Node
	// Cleared are the others: the annotation is removed from their pods.
	Cleared []*Node
}

// RankForDeletionCost ranks the input's managed nodes (see
// DeletionCostRanking). A node goes to Cleared when it is not initialized,
// nominated, protected by do-not-disrupt or a PodDisruptionBudget, hosts a pod
// nothing would recreate elsewhere (outside kube-system, not controlled by a
// ReplicaSet, Job or DaemonSet), has no known price, belongs to a static
// NodePool, or is neither drifted nor in a NodePool that consolidates
// (consolidateAfter: Never); and when its NodePool's budget is used up.
func RankForDeletionCost(in *Input) *DeletionCostRanking {
	p := NewPass(in)
	out := &DeletionCostRanking{}
	var drifted, normal []*node
	for _, n := range p.nodes {
		if n.NodeClaim == nil || n.NodePool == "" {
			continue
		}
		switch {
		case n.Deleting || n.MarkedForDeletion || disruptedTaint(n.Node.Node):
			out.GoingAway = append(out.GoingAway, n.Node)
		case n.pool == nil || p.block(n, MethodSingleNodeConsolidation) != nil, pinned(n), !n.priced, n.pool.NodePool.Spec.Replicas != nil:
			out.Cleared = append(out.Cleared, n.Node)
		case n.drifted:
			drifted = append(drifted, n)
		case n.pool.NodePool.Spec.Disruption.ConsolidateAfter.Duration == nil:
			out.Cleared = append(out.Cleared, n.Node)
		default:
			normal = append(normal, n)
		}
	}
	within := func(ns []*node, r v1.DisruptionReason) []*node {
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i].price/ns[i].rescheduleCost, ns[j].price/ns[j].rescheduleCost
			if a != b {
				return a > b
			}
			return ns[i].Name < ns[j].Name
		})
		used := map[string]int{}
		var kept []*node
		for _, n := range ns {
			pool := n.pool.NodePool.Name
			if used[pool] < p.budget(n, r).Allowed {
				used[pool]++
				kept = append(kept, n)
			} else {
				out.Cleared = append(out.Cleared, n.Node)
			}
		}
		return kept
	}
	for _, n := range append(within(drifted, v1.DisruptionReasonDrifted), within(normal, v1.DisruptionReasonUnderutilized)...) {
		out.Ranked = append(out.Ranked, n.Node)
	}
	return out
}

// DeletionCostRank is the annotation value of the i-th of n ranked nodes.
func DeletionCostRank(i, n int) int { return i - n }

func disruptedTaint(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
			return true
		}
	}
	return false
}

// pinned: a pod outside kube-system that no ReplicaSet, Job or DaemonSet
// would recreate elsewhere holds the node.
func pinned(n *node) bool {
	for _, pod := range n.moving {
		if pod.Namespace == metav1.NamespaceSystem {
			continue
		}
		c := metav1.GetControllerOf(pod)
		if c == nil || !((c.Kind == "ReplicaSet" && c.APIVersion == "apps/v1") || (c.Kind == "Job" && c.APIVersion == "batch/v1") || (c.Kind == "DaemonSet" && c.APIVersion == "apps/v1")) {
			return true
		}
	}
	return false
}
