package disrupter_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// An oversized node whose only pod claims a device through Dynamic Resource
// Allocation is kept (IGNORE_DRA_REQUESTS=true): nothing would take the pod,
// so the node is Unconsolidatable, and says why in its event and condition.
func TestNodeWithPodWithResourceClaimIsNotConsolidated(t *testing.T) {
	f := newFixture(t)
	_, nc := f.node(t, "big", "c-16x-amd64-linux")
	p := fixtures.Pod("trainer", fixtures.OnNode("big"), fixtures.WithRequests("cpu", "1", "memory", "256Mi"),
		fixtures.WithResourceClaim("gpu", "gpu-template"), fixtures.WithPhase(corev1.PodRunning))
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want the node kept, got %+v", r)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil || len(ncs.Items) != 1 {
		t.Fatalf("want no replacement, got %d nodeclaims (%v)", len(ncs.Items), err)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if got.DeletionTimestamp != nil {
		t.Fatal("the node is being deleted")
	}
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Reason != "Unconsolidatable" {
		t.Fatalf("DisruptionBlocked %+v", c)
	}
	want := "Normal Unconsolidatable its pods cannot all be rescheduled: pod default/trainer: " + scheduling.DRAErrorMessage
	if evs := f.events(); !containsEvent(evs, want) {
		t.Fatalf("want the event %q, got %q", want, evs)
	}
}
