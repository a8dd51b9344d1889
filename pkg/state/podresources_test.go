package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// cached is the pod as the manager's cache holds it, after the informers' transform.
func cached(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := informer.Transform(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

// placedOnNode reports whether a solve over the cluster's snapshot puts the pending pod on the
// existing node n1.
func placedOnNode(t *testing.T, c *state.Cluster, pending *corev1.Pod) bool {
	t.Helper()
	in, err := c.Snapshot(t.Context(), []*corev1.Pod{pending})
	if err != nil {
		t.Fatal(err)
	}
	res := scheduling.Solve(in)
	for _, e := range res.ExistingNodes {
		for _, p := range e.Pods {
			if p == pending {
				return e.Node.Name == "n1"
			}
		}
	}
	return false
}

// Cluster state hands the solver a bound pod's pod-level requests, and a resized pod's larger
// allocation, as what the pod holds of its node.
func TestBoundPodLevelAndResizedRequestsOccupyTheNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound *corev1.Pod
	}{
		{"pod-level cpu", fixtures.Pod("big", fixtures.OnNode("n1"), fixtures.WithPhase(corev1.PodRunning), fixtures.WithPodRequests("cpu", "3"))},
		{"resize pending", func() *corev1.Pod {
			p := fixtures.Pod("big", fixtures.OnNode("n1"), fixtures.WithPhase(corev1.PodRunning), fixtures.WithRequests("cpu", "500m"),
				fixtures.WithPodConditions(corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}))
			// Shrunk in its spec, the kubelet still holds 3 cpu for it.
			held := fixtures.ResourceList("cpu", "3")
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, AllocatedResources: held,
				Resources: &corev1.ResourceRequirements{Requests: held}}}
			return p
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := state.NewCluster(clocktesting.NewFakeClock(time.Now()), nil)
			c.UpdateNode(node("n1", "fake://n1", nil)) // 3900m cpu allocatable
			c.UpdatePod(cached(t, tc.bound))
			if placedOnNode(t, c, fixtures.Pod("small", fixtures.WithUID("small"), fixtures.WithRequests("cpu", "1"))) {
				t.Fatal("a 1-cpu pod was placed next to a pod holding 3 of the node's 3900m cpu")
			}
			if !placedOnNode(t, c, fixtures.Pod("tiny", fixtures.WithUID("tiny"), fixtures.WithRequests("cpu", "500m"))) {
				t.Fatal("a 500m pod was not placed in the node's remaining 900m")
			}
		})
	}
}
