package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func podWithUID(uid string) *corev1.Pod { return fixtures.Pod(uid, fixtures.WithUID(uid)) }

func TestPlannedPodsStayOnTheirComingNodeClaim(t *testing.T) {
	a, b, c := podWithUID("a"), podWithUID("b"), podWithUID("c")
	bound := podWithUID("bound")
	bound.Spec.NodeName = "claim-1"
	p := newPlans()
	p.record("claim-1", []*corev1.Pod{a, b})
	p.record("claim-2", []*corev1.Pod{c})
	// State's slice, with room to spare that apply must not write into.
	shared := make([]*corev1.Pod, 1, 2)
	shared[0] = bound
	coming := &scheduling.ExistingNode{Name: "claim-1", InFlight: true, Pods: shared}
	ready := &scheduling.ExistingNode{Name: "claim-2", Initialized: true}
	in := &scheduling.Input{Pods: []*corev1.Pod{a, b, c}, ExistingNodes: []*scheduling.ExistingNode{coming, ready}}

	left, keptOn := p.apply(in)
	if len(left) != 1 || left[0] != c {
		t.Fatalf("left to solve %v, want only c (its node is initialized)", left)
	}
	if len(keptOn) != 1 || keptOn[0] != "claim-1" {
		t.Fatalf("kept on %v, want claim-1", keptOn)
	}
	if len(coming.Pods) != 3 || coming.Pods[1] != a || coming.Pods[2] != b {
		t.Fatalf("claim-1 holds %v, want its bound pod then a and b", coming.Pods)
	}
	if shared[:2][1] != nil {
		t.Fatal("apply wrote into the snapshot's own slice")
	}

	// c's plan is forgotten (its node is initialized); a is no longer pending.
	in = &scheduling.Input{Pods: []*corev1.Pod{b, c}, ExistingNodes: []*scheduling.ExistingNode{{Name: "claim-1", InFlight: true}, ready}}
	if left, _ := p.apply(in); len(left) != 1 || left[0] != c {
		t.Fatalf("left to solve %v, want c", left)
	}
	if _, ok := p.claims["a"]; ok {
		t.Error("the plan of a pod no longer pending is kept")
	}
	if _, ok := p.claims["c"]; ok {
		t.Error("the plan of a pod whose node is initialized is kept")
	}
	// The NodeClaim went away: b is solved again.
	in = &scheduling.Input{Pods: []*corev1.Pod{b}}
	if left, _ := p.apply(in); len(left) != 1 || left[0] != b {
		t.Fatalf("left to solve %v, want b", left)
	}
}
