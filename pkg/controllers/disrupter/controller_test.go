package disrupter_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestEmptyNodeDeletedAfterValidation(t *testing.T) {
	f := newFixture(t)
	node, nc := f.node(t, "empty", "c-4x-amd64-linux")
	busy, _ := f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	f.pod(t, "db", busy.Name, "1", nil)
	before := testutil.ToFloat64(disrupter.DecisionsTotal.WithLabelValues("delete", "empty", "empty"))
	byPoolBefore := testutil.ToFloat64(disrupter.DecisionsByNodePoolTotal.WithLabelValues("default", "delete", "empty", "empty"))
	// The disruption counter carries the NodePool's policy and, with no
	// terminationGracePeriod, the graceful termination mode.
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues("empty", nc.Labels[v1.NodePoolLabelKey], nc.Labels[v1.CapacityTypeLabelKey],
		string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful)
	disruptedBefore := testutil.ToFloat64(disrupted)

	done := f.startPass(t)
	f.awaitValidation(t, done)
	// Nothing happens before the validation delay has passed.
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("node tainted before validation")
	}
	f.clock.Step(disrupter.ValidationDelay)
	if r := f.finish(t, done); !r.acted || r.err != nil {
		t.Fatalf("want a command started, got %+v", r)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); !hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("candidate not tainted karpenter.sh/disrupted")
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonEmpty) {
		t.Fatalf("DisruptionReason condition %+v", c)
	}
	if after := testutil.ToFloat64(disrupter.DecisionsTotal.WithLabelValues("delete", "empty", "empty")); after != before+1 {
		t.Fatalf("decisions_total{delete,empty,empty} %v -> %v", before, after)
	}
	if after := testutil.ToFloat64(disrupter.DecisionsByNodePoolTotal.WithLabelValues("default", "delete", "empty", "empty")); after != byPoolBefore+1 {
		t.Fatalf("decisions_by_nodepool_total{default,delete,empty,empty} %v -> %v", byPoolBefore, after)
	}
	// A delete has no replacement to wait for: the queue deletes the candidate.
	ExpectReconciledQueue(t, f, "empty")
	ExpectNotFound(f.ctx, t, testEnv.Client, nc.DeepCopy())
	ExpectExists(f.ctx, t, testEnv.Client, busy.DeepCopy())
	if after := testutil.ToFloat64(disrupted); after != disruptedBefore+1 {
		t.Fatalf("nodeclaims_disrupted_total{empty,%s,%s,WhenEmptyOrUnderutilized,graceful} %v -> %v",
			nc.Labels[v1.NodePoolLabelKey], nc.Labels[v1.CapacityTypeLabelKey], disruptedBefore, after)
	}
}

func ExpectReconciledQueue(t *testing.T, f *fixture, id string) {
	t.Helper()
	if _, err := f.queue.Reconcile(f.ctx, id); err != nil {
		t.Fatal(err)
	}
}

func TestConsolidationReplacesWithCheaperNodeAfterItInitializes(t *testing.T) {
	f := newFixture(t)
	big := f.types["c-16x-amd64-linux"]
	bigPrice := big.Offerings[0].Price
	for _, o := range big.Offerings {
		if o.CapacityType == v1.CapacityTypeOnDemand && o.Zone == "test-zone-a" {
			bigPrice = o.Price
		}
	}
	_, nc := f.node(t, "big", "c-16x-amd64-linux")
	f.pod(t, "web", "big", "1", nil)
	podsDisrupted := metrics.PodsDisruptionInitiatedTotal.WithLabelValues("underutilized", "default", v1.CapacityTypeOnDemand,
		string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful)
	podsBefore := testutil.ToFloat64(podsDisrupted)

	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want a replacement started, got %+v", r)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	var repl *v1.NodeClaim
	for i := range ncs.Items {
		if ncs.Items[i].Name != "big" {
			repl = &ncs.Items[i]
		}
	}
	if repl == nil || len(ncs.Items) != 2 {
		t.Fatalf("want exactly one replacement NodeClaim, got %d NodeClaims", len(ncs.Items))
	}
	if repl.Labels[v1.NodePoolLabelKey] != "default" || len(repl.OwnerReferences) != 1 || repl.OwnerReferences[0].Name != "default" {
		t.Fatalf("replacement not built like a provisioned NodeClaim: %+v", repl.ObjectMeta)
	}
	for _, r := range repl.Spec.Requirements {
		if r.Key != corev1.LabelInstanceTypeStable {
			continue
		}
		if len(r.Values) == 0 {
			t.Fatal("replacement lists no instance type")
		}
		for _, name := range r.Values {
			it := f.types[name]
			cheapest := 1e9
			for _, o := range it.Offerings {
				if o.CapacityType == v1.CapacityTypeOnDemand && o.Price < cheapest {
					cheapest = o.Price
				}
			}
			if name == "c-16x-amd64-linux" || cheapest >= bigPrice {
				t.Fatalf("replacement type %s (%.3f/h) is not cheaper than the candidate (%.3f/h)", name, cheapest, bigPrice)
			}
		}
	}
	// The candidate stays until the replacement is Initialized.
	ExpectReconciledQueue(t, f, "big")
	ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	repl.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, repl)
	ExpectReconciledQueue(t, f, "big")
	ExpectNotFound(f.ctx, t, testEnv.Client, nc.DeepCopy())
	ExpectExists(f.ctx, t, testEnv.Client, repl.DeepCopy())
	// The candidate's one pod is counted as disrupted when it is deleted.
	if got := testutil.ToFloat64(podsDisrupted); got != podsBefore+1 {
		t.Fatalf("pods_disruption_initiated_total{underutilized,...} %v -> %v, want +1", podsBefore, got)
	}
}

func TestBudgetZeroBlocksWithEvent(t *testing.T) {
	f := newFixture(t, v1.Budget{Nodes: "0"})
	node, nc := f.node(t, "empty", "c-4x-amd64-linux")
	before := testutil.ToFloat64(disrupter.FailedValidationsTotal.WithLabelValues("empty"))
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	const msg = "nodepool default: budget allows 0 Empty disruptions"
	events := f.events()
	if !containsEvent(events, "Normal DisruptionBlocked "+msg) {
		t.Fatalf("want a DisruptionBlocked event %q, got %q", msg, events)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked)
	if !c.IsTrue() || c.Reason != "DisruptionBudget" || c.Message != msg {
		t.Fatalf("DisruptionBlocked condition %+v", c)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("node tainted despite a zero budget")
	}
	if v := gaugeSeries(t, disrupter.NodePoolAllowedDisruptions, map[string]string{"nodepool": "default", "reason": "Empty"}); v != 0 {
		t.Fatalf("karpenter_nodepools_allowed_disruptions{default,Empty} = %v, want 0", v)
	}
	if testutil.ToFloat64(disrupter.FailedValidationsTotal.WithLabelValues("empty")) != before {
		t.Fatal("nothing was decided, so nothing failed validation")
	}

	// The budget opens: the node goes and its condition is cleared before it does.
	np := ExpectExists(f.ctx, t, testEnv.Client, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the empty node disrupted once the budget allows it, got %+v", r)
	}
	got = ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); c != nil {
		t.Fatalf("DisruptionBlocked should be gone once the node is disrupted, got %+v", c)
	}
}

func TestPDBBlocksWithEvent(t *testing.T) {
	f := newFixture(t)
	node, nc := f.node(t, "big", "c-16x-amd64-linux")
	f.pod(t, "web-7c9", "big", "1", map[string]string{"app": "web"})
	f.pdb(t, "web", 0, map[string]string{"app": "web"})
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	const msg = "PDB default/web blocks eviction of web-7c9"
	events := f.events()
	if !containsEvent(events, "Normal DisruptionBlocked "+msg) {
		t.Fatalf("want a DisruptionBlocked event %q, got %q", msg, events)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Reason != "PodDisruptionBudget" || c.Message != msg {
		t.Fatalf("DisruptionBlocked condition %+v", c)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("node tainted despite the PDB")
	}
	// A second pass repeats no event: the recorder deduplicates.
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("got %+v", r)
	}
	if again := f.events(); containsEvent(again, msg) {
		t.Fatalf("event repeated within the dedupe window: %q", again)
	}
}

func TestValidationDropsDecisionWhenCandidateGetsPod(t *testing.T) {
	f := newFixture(t)
	node, nc := f.node(t, "empty", "c-4x-amd64-linux")
	before := testutil.ToFloat64(disrupter.FailedValidationsTotal.WithLabelValues("empty"))

	done := f.startPass(t)
	f.awaitValidation(t, done)
	// A pod lands on the node while the decision waits.
	f.pod(t, "arrived", node.Name, "500m", nil)
	f.sync(t)
	f.clock.Step(disrupter.ValidationDelay)
	if r := f.finish(t, done); r.acted || r.err != nil {
		t.Fatalf("want the decision dropped, got %+v", r)
	}
	if after := testutil.ToFloat64(disrupter.FailedValidationsTotal.WithLabelValues("empty")); after != before+1 {
		t.Fatalf("failed_validations_total{empty} %v -> %v", before, after)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("node tainted although validation failed")
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if got.DeletionTimestamp != nil || got.StatusConditions().Get(v1.ConditionTypeDisruptionReason) != nil {
		t.Fatal("candidate touched although validation failed")
	}
}

func TestDriftActsWithoutValidationDelay(t *testing.T) {
	f := newFixture(t)
	_, nc := f.node(t, "old", "c-4x-amd64-linux", notConsolidatable, driftedCondition)
	f.pod(t, "web", "old", "1", nil)
	done := f.startPass(t)
	r := f.finish(t, done)
	if !r.acted || r.err != nil {
		t.Fatalf("want drift to start a replacement at once, got %+v", r)
	}
	if f.clock.HasWaiters() {
		t.Fatal("drift should not wait for validation")
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonDrifted) {
		t.Fatalf("DisruptionReason %+v", c)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil || len(ncs.Items) != 2 {
		t.Fatalf("want the drifted node and its replacement, got %d (%v)", len(ncs.Items), err)
	}
}

func TestUnconsolidatableExplainedAndClearedWhenItChanges(t *testing.T) {
	f := newFixture(t)
	// c-2x holding 1.5 cpu: no cheaper on-demand type holds it, nowhere else to go.
	_, nc := f.node(t, "small", "c-2x-amd64-linux")
	f.pod(t, "web", "small", "1500m", nil)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("got %+v", r)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked)
	if !c.IsTrue() || c.Reason != "Unconsolidatable" {
		t.Fatalf("DisruptionBlocked %+v", c)
	}
	if !containsEvent(f.events(), "Normal Unconsolidatable no cheaper replacement") {
		t.Fatal("want an Unconsolidatable event")
	}
	// The node stops being Consolidatable (a pod event): nothing wants it, the
	// condition goes.
	got.StatusConditions().Clear(v1.ConditionTypeConsolidatable)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, got)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("got %+v", r)
	}
	got = ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); c != nil {
		t.Fatalf("stale DisruptionBlocked condition %+v", c)
	}
}

func TestMetricsOfAPass(t *testing.T) {
	f := newFixture(t, v1.Budget{Nodes: "50%"})
	var last *corev1.Node
	for i := 0; i < 3; i++ {
		n, _ := f.node(t, "n"+strconv.Itoa(i), "c-4x-amd64-linux", notConsolidatable)
		f.pod(t, "p"+strconv.Itoa(i), n.Name, "3", nil)
		last = n
	}
	// A NotReady node consumes the budget.
	last = ExpectExists(f.ctx, t, testEnv.Client, last)
	last.Status.Conditions[0].Status = corev1.ConditionFalse
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, last)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("got %+v", r)
	}
	// 50% of 3 initialized nodes, rounded up; the NotReady node is not
	// subtracted from this gauge but shows in nodes_consuming_budgets.
	drifted := map[string]string{"nodepool": "default", "reason": "Drifted"}
	if v := gaugeSeries(t, disrupter.NodePoolAllowedDisruptions, drifted); v != 2 {
		t.Fatalf("allowed_disruptions{default,Drifted} = %v, want 2", v)
	}
	if v := gaugeSeries(t, disrupter.NodePoolNodesConsumingBudgets, drifted); v != 1 {
		t.Fatalf("nodes_consuming_budgets{default,Drifted} = %v, want 1 (the NotReady node)", v)
	}
	if v := testutil.ToFloat64(disrupter.EligibleNodes.WithLabelValues("underutilized")); v != 0 {
		t.Fatalf("eligible_nodes{underutilized} = %v, want 0", v)
	}
	if testutil.CollectAndCount(disrupter.EvaluationDuration) == 0 {
		t.Fatal("no evaluation duration observed")
	}
}

func TestStartRunsPassesOnTheClock(t *testing.T) {
	f := newFixture(t)
	a, _ := f.node(t, "a", "c-4x-amd64-linux")
	f.sync(t)
	ctx, cancel := context.WithCancel(f.ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = f.ctrl.Start(ctx)
	}()
	defer func() { cancel(); <-stopped }()
	tainted := func(n *corev1.Node) func() error {
		return func() error {
			if !hasTaint(ExpectExists(f.ctx, t, testEnv.Client, n.DeepCopy()), v1.DisruptedTaintKey) {
				return fmt.Errorf("node %s not tainted yet", n.Name)
			}
			return nil
		}
	}
	waiting := func() error {
		if !f.clock.HasWaiters() {
			return fmt.Errorf("no pass waiting on the clock")
		}
		return nil
	}
	// First pass: a is empty; it waits for validation, then acts.
	Eventually(t, 20*time.Second, waiting)
	f.clock.Step(disrupter.ValidationDelay)
	Eventually(t, 20*time.Second, tainted(a))
	// The next pass runs at once, finds a already held by the queue, and
	// sleeps for the poll period.
	Eventually(t, 20*time.Second, waiting)
	b, _ := f.node(t, "b", "c-4x-amd64-linux")
	f.sync(t)
	if hasTaint(ExpectExists(f.ctx, t, testEnv.Client, b.DeepCopy()), v1.DisruptedTaintKey) {
		t.Fatal("b disrupted before the poll period passed")
	}
	f.clock.Step(disrupter.PollPeriod)
	Eventually(t, 20*time.Second, waiting)
	f.clock.Step(disrupter.ValidationDelay)
	Eventually(t, 20*time.Second, tainted(b))
}
