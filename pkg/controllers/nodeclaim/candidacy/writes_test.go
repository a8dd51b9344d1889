package candidacy_test

import (
	"slices"
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/lagging"
)

// TestStaleReadAfterOwnApplyWritesNothing: a pass that reads the NodeClaim
// from before this controller's own last apply (another controller's write,
// committed just before it, arrived first) computes the same conditions and
// writes nothing; Consolidatable keeps its lastTransitionTime.
func TestStaleReadAfterOwnApplyWritesNothing(t *testing.T) {
	f := setup(t)
	l := lagging.New(t, e.Config, e.Scheme)
	ctrl := candidacy.NewController(l, f.cloud, f.clk)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-stale", true)

	ExpectReconciled(f.ctx, t, ctrl, nc)
	written := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	first := cond(written, v1.ConditionTypeConsolidatable)
	if !first.IsFalse() || first.Reason != candidacy.ReasonConsolidateAfterNotElapsed || l.StatusWrites() != 1 {
		t.Fatalf("first pass: Consolidatable %+v after %d writes", first, l.StatusWrites())
	}

	stale := written.DeepCopy()
	stale.Status.Conditions = slices.DeleteFunc(stale.Status.Conditions, func(c status.Condition) bool { return c.Type == v1.ConditionTypeConsolidatable })
	l.HoldClaim(stale)
	f.clk.Step(2 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	if n := l.StatusWrites(); n != 1 {
		t.Fatalf("a pass from a stale read wrote %d times, want none", n-1)
	}
	if c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeConsolidatable); !c.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Fatalf("Consolidatable moved from %v to %v", first.LastTransitionTime, c.LastTransitionTime)
	}

	// Once the consolidateAfter has passed it is written, from the same read.
	f.clk.Step(28 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	if c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeConsolidatable); !c.IsTrue() || l.StatusWrites() != 2 {
		t.Fatalf("at consolidateAfter: Consolidatable %+v after %d writes", c, l.StatusWrites())
	}
}
