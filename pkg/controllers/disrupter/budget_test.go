package disrupter_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestScheduledBudgetBlocksUntilItsWindowEnds: a "nodes: 0" budget active
// from 09:00 UTC for 8h blocks the empty node at 10:00 and says until when;
// once the controller's clock passes 17:00 the 100% budget alone applies and
// the node is disrupted.
func TestScheduledBudgetBlocksUntilItsWindowEnds(t *testing.T) {
	f := newFixture(t,
		v1.Budget{Nodes: "0", Schedule: new("0 9 * * *"), Duration: &metav1.Duration{Duration: 8 * time.Hour}},
		v1.Budget{Nodes: "100%"},
	)
	tomorrow := f.clock.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	f.clock.SetTime(tomorrow.Add(10 * time.Hour))
	_, nc := f.node(t, "empty", "c-4x-amd64-linux")

	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done inside the window, got %+v", r)
	}
	const msg = "nodepool default: budget allows 0 Empty disruptions until 17:00 UTC"
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Message != msg {
		t.Fatalf("DisruptionBlocked condition %+v, want message %q", c, msg)
	}
	if !containsEvent(f.events(), "Normal DisruptionBlocked "+msg) {
		t.Fatalf("no DisruptionBlocked event %q", msg)
	}

	// One minute before the window ends it still blocks.
	f.clock.SetTime(tomorrow.Add(17*time.Hour - time.Minute))
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done at 16:59, got %+v", r)
	}
	// After 17:00 the node goes.
	f.clock.SetTime(tomorrow.Add(17*time.Hour + time.Second))
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the empty node disrupted after the window, got %+v", r)
	}
	ExpectReconciledQueue(t, f, "empty")
	ExpectNotFound(f.ctx, t, testEnv.Client, nc.DeepCopy())
}

// TestBudgetForOneReasonLeavesTheOthers: "nodes: 0" for Empty blocks the
// empty node while the drifted node is replaced under the 100% budget.
func TestBudgetForOneReasonLeavesTheOthers(t *testing.T) {
	f := newFixture(t,
		v1.Budget{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}},
		v1.Budget{Nodes: "100%"},
	)
	emptyNode, empty := f.node(t, "empty", "c-4x-amd64-linux")
	busy, drifted := f.node(t, "drifted", "c-4x-amd64-linux", notConsolidatable, driftedCondition)
	f.pod(t, "web", busy.Name, "1", nil)

	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the drifted node disrupted, got %+v", r)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, busy.DeepCopy()); !hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("drifted node not tainted: the Empty budget must not apply to Drifted")
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, emptyNode.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("empty node tainted despite the Empty budget of 0")
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, drifted.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonDrifted) {
		t.Fatalf("DisruptionReason condition of the drifted node %+v", c)
	}
	got = ExpectExists(f.ctx, t, testEnv.Client, empty.DeepCopy())
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Reason != "DisruptionBudget" {
		t.Fatalf("DisruptionBlocked condition of the empty node %+v", c)
	}
}
