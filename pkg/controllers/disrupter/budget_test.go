package disrupter_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestBudgetHeldNodesAreNotRewrittenPerPass: while a budget is used up, the
// nodes it holds carry a DisruptionBlocked condition naming the budget, not
// the count of nodes already disrupting: that count changes with nearly every
// pass of a consolidating fleet, and rewriting the condition of every node the
// budget held each pass was one NodeClaim status write per node per pass. The
// count goes in the NodePool's event only (upstream has no per-node event for
// a budget).
func TestBudgetHeldNodesAreNotRewrittenPerPass(t *testing.T) {
	f := newFixture(t, v1.Budget{Nodes: "1"})
	_, a := f.node(t, "empty-a", "c-4x-amd64-linux")
	_, b := f.node(t, "empty-b", "c-4x-amd64-linux")
	var sick []*corev1.Node
	for _, name := range []string{"sick-1", "sick-2"} {
		n, _ := f.node(t, name, "c-4x-amd64-linux", notConsolidatable)
		f.pod(t, "p-"+name, name, "1", nil)
		sick = append(sick, n)
	}
	notReady := func(n *corev1.Node) {
		t.Helper()
		n = ExpectExists(f.ctx, t, testEnv.Client, n.DeepCopy())
		n.Status.Conditions[0].Status = corev1.ConditionFalse
		if err := testEnv.Client.Status().Update(f.ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	const msg = "nodepool default: every Empty disruption its budget allows is taken by nodes already disrupting"
	// One NotReady node uses up the budget of one.
	notReady(sick[0])
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	versions := map[string]string{}
	for _, nc := range []*v1.NodeClaim{a, b} {
		got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
		if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Reason != "DisruptionBudget" || c.Message != msg {
			t.Fatalf("%s: DisruptionBlocked condition %+v, want DisruptionBudget %q", nc.Name, c, msg)
		}
		versions[nc.Name] = got.ResourceVersion
	}
	counted := 0
	for _, e := range f.events() {
		if strings.Contains(e, "Empty disruption(s) and 1 node(s) are already disrupting") {
			counted++
		}
	}
	if counted != 1 {
		t.Fatalf("%d events count the nodes already disrupting, want the NodePool's one", counted)
	}
	// A second node goes NotReady: the count changes, the held nodes' conditions do not.
	notReady(sick[1])
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	if !containsEvent(f.events(), "budget allows 1 Empty disruption(s) and 2 node(s) are already disrupting") {
		t.Fatal("the NodePool's event does not give the new count")
	}
	for _, nc := range []*v1.NodeClaim{a, b} {
		if got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy()); got.ResourceVersion != versions[nc.Name] {
			t.Fatalf("%s rewritten (resourceVersion %s -> %s): %+v", nc.Name, versions[nc.Name], got.ResourceVersion,
				got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked))
		}
	}
}
