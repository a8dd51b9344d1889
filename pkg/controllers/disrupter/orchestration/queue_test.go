package orchestration_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestStartCommandTaintsConditionsCreatesAndMarks(t *testing.T) {
	f := setup(t)
	a, b := f.candidate(t, "start-a"), f.candidate(t, "start-b")
	r := replacement()
	createdBefore := testutil.ToFloat64(metrics.NodeClaimsCreatedTotal.WithLabelValues("underutilized", "default", "false"))
	cmd := &Command{
		Method: disruption.MethodMultiNodeConsolidation, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{a, b}, Replacements: []*v1.NodeClaim{r},
		Explanation: "replace 2 nodes (0.34/h) with 1 c-4x-amd64-linux (0.17/h)",
	}
	if f.queue.Has(a.Name) {
		t.Fatal("Has before the command started")
	}
	if err := f.queue.StartCommand(f.ctx, cmd); err != nil {
		t.Fatal(err)
	}

	for _, c := range []*v1.NodeClaim{a, b} {
		if !tainted(t, f.ctx, c.Name) {
			t.Errorf("node %s not tainted %s", c.Name, v1.DisruptedTaintKey)
		}
		cond := reasonCondition(t, f.ctx, c.Name).StatusConditions().Get(v1.ConditionTypeDisruptionReason)
		if !cond.IsTrue() || cond.Reason != "Underutilized" || cond.Message != cmd.Explanation {
			t.Errorf("%s DisruptionReason = %+v, want True/Underutilized with the explanation", c.Name, cond)
		}
		if !markedInState(f.cluster, c.Name) {
			t.Errorf("%s not marked for deletion in cluster state", c.Name)
		}
		if !f.queue.Has(c.Name) {
			t.Errorf("Has(%s) = false for a candidate in flight", c.Name)
		}
		if deleting(t, f.ctx, c) {
			t.Errorf("%s deleted before its replacement initialized", c.Name)
		}
	}
	if r.Name == "" {
		t.Fatal("cmd.Replacements[0] does not hold the created object")
	}
	ExpectExists(f.ctx, t, e.Client, r.DeepCopy())
	if markedInState(f.cluster, r.Name) || f.queue.Has(r.Name) {
		t.Error("the replacement is treated as a candidate")
	}
	inState := false
	for _, sn := range f.cluster.Nodes() {
		if sn.NodeClaim != nil && sn.NodeClaim.Name == r.Name && sn.InFlight() {
			inState = true
		}
	}
	if !inState || !f.cluster.IsNominated(r.Name) {
		t.Errorf("replacement in cluster state %v, nominated %v; want both right after StartCommand", inState, f.cluster.IsNominated(r.Name))
	}
	if got := testutil.ToFloat64(metrics.NodeClaimsCreatedTotal.WithLabelValues("underutilized", "default", "false")); got != createdBefore+1 {
		t.Errorf("karpenter_nodeclaims_created_total{reason=underutilized} = %v, want %v", got, createdBefore+1)
	}
	// One event per candidate NodeClaim and per Node.
	if n := countEvents(f.events(), "Normal", EventDisruptionLaunching, r.Name, cmd.Explanation); n != 4 {
		t.Errorf("%d %s events naming the replacement, want 4", n, EventDisruptionLaunching)
	}

	// A candidate is in at most one command; the refused command changes nothing.
	err := f.queue.StartCommand(f.ctx, &Command{Method: disruption.MethodEmptiness, Decision: DecisionDelete, Candidates: []*v1.NodeClaim{b}})
	if err == nil {
		t.Fatal("a second command for a candidate in flight was accepted")
	}
	if !tainted(t, f.ctx, b.Name) || !f.queue.Has(b.Name) || !markedInState(f.cluster, b.Name) || f.queue.Len() != 1 {
		t.Error("the refused command disturbed the command in flight")
	}
	// A command must say which method decided it: its reason and labels are the method's.
	if err := f.queue.StartCommand(f.ctx, &Command{Decision: DecisionDelete, Candidates: []*v1.NodeClaim{b}}); err == nil || !strings.Contains(err.Error(), "no Method") {
		t.Errorf("a command without a Method: got %v, want an error naming Method", err)
	}
}

func TestCandidatesDeletedOnlyAfterEveryReplacementIsInitialized(t *testing.T) {
	f := setup(t)
	a := f.candidate(t, "drift-a")
	r1, r2 := replacement(), replacement()
	before := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("drifted", "default", v1.CapacityTypeOnDemand, "", metrics.TerminationModeGraceful))
	cmd := &Command{Method: disruption.MethodDrift, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{a}, Replacements: []*v1.NodeClaim{r1, r2}, Explanation: "NodePool template changed"}
	if err := f.queue.StartCommand(f.ctx, cmd); err != nil {
		t.Fatal(err)
	}
	f.events()

	if d := f.reconcile(t, a.Name); d <= 0 || d > 10*time.Second {
		t.Errorf("waiting command requeued after %v, want within (0, 10s]", d)
	}
	if deleting(t, f.ctx, a) {
		t.Fatal("candidate deleted while no replacement is initialized")
	}
	if n := countEvents(f.events(), EventDisruptionWaitingReadiness, r1.Name, r2.Name); n != 2 {
		t.Errorf("%d %s events naming both replacements, want 2 (NodeClaim and Node)", n, EventDisruptionWaitingReadiness)
	}

	f.initialize(t, r1)
	f.reconcile(t, a.Name)
	if deleting(t, f.ctx, a) || !f.queue.Has(a.Name) {
		t.Fatal("candidate deleted while one replacement is not initialized")
	}
	if n := countEvents(f.events(), EventDisruptionWaitingReadiness); n != 0 {
		t.Errorf("%d more %s events, want the first only", n, EventDisruptionWaitingReadiness)
	}

	f.initialize(t, r2)
	if d := f.reconcile(t, a.Name); d != 0 {
		t.Errorf("finished command asked to be requeued after %v", d)
	}
	if !deleting(t, f.ctx, a) {
		t.Fatal("candidate not deleted after every replacement initialized")
	}
	if f.queue.Has(a.Name) || f.queue.Len() != 0 {
		t.Error("finished command still in the queue")
	}
	if !markedInState(f.cluster, a.Name) {
		t.Error("candidate unmarked before cluster state saw it go")
	}
	if n := countEvents(f.events(), EventDisruptionTerminating, "Drifted"); n != 2 {
		t.Errorf("%d %s events, want 2", n, EventDisruptionTerminating)
	}
	if got := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("drifted", "default", v1.CapacityTypeOnDemand, "", metrics.TerminationModeGraceful)); got != before+1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=drifted} = %v, want %v", got, before+1)
	}
	// Reconciling a finished command does nothing.
	f.reconcile(t, a.Name)
}

func TestDeleteDecisionDeletesAtOnce(t *testing.T) {
	f := setup(t)
	a, b := f.candidate(t, "empty-a"), f.candidate(t, "empty-b")
	before := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("empty", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmpty), metrics.TerminationModeGraceful))
	cmd := &Command{Method: disruption.MethodEmptiness, Decision: DecisionDelete,
		Candidates: []*v1.NodeClaim{a, b}, Explanation: "nodes are empty",
		Metrics: map[string]CandidateMetrics{a.Name: {ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty}, b.Name: {ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty}}}
	if err := f.queue.StartCommand(f.ctx, cmd); err != nil {
		t.Fatal(err)
	}
	if !tainted(t, f.ctx, a.Name) || !tainted(t, f.ctx, b.Name) {
		t.Fatal("delete candidates not tainted")
	}
	if d := f.reconcile(t, a.Name); d != 0 {
		t.Errorf("delete command requeued after %v", d)
	}
	if !deleting(t, f.ctx, a) || !deleting(t, f.ctx, b) {
		t.Fatal("delete command's candidates not deleted on its first reconcile")
	}
	if got := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("empty", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmpty), metrics.TerminationModeGraceful)); got != before+2 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=empty} = %v, want %v", got, before+2)
	}
	evs := f.events()
	if countEvents(evs, EventDisruptionLaunching) != 0 || countEvents(evs, EventDisruptionTerminating, "nodes are empty") != 4 {
		t.Errorf("events %v: want no launching and one terminating per NodeClaim and Node", evs)
	}
}

// expectRolledBack asserts the candidate is as before the command: un-tainted,
// no DisruptionReason, not marked, not in the queue, not deleted.
func expectRolledBack(t *testing.T, f *fixture, nc *v1.NodeClaim) {
	t.Helper()
	if tainted(t, f.ctx, nc.Name) {
		t.Errorf("%s still tainted", nc.Name)
	}
	if c := reasonCondition(t, f.ctx, nc.Name).StatusConditions().Get(v1.ConditionTypeDisruptionReason); c != nil {
		t.Errorf("%s still has DisruptionReason %+v", nc.Name, c)
	}
	if markedInState(f.cluster, nc.Name) {
		t.Errorf("%s still marked for deletion", nc.Name)
	}
	if f.queue.Has(nc.Name) {
		t.Errorf("%s still in the queue", nc.Name)
	}
	if deleting(t, f.ctx, nc) {
		t.Errorf("%s deleted although its command failed", nc.Name)
	}
}

func TestReplacementDeletedRollsBack(t *testing.T) {
	for name, remove := range map[string]func(*testing.T, context.Context, *v1.NodeClaim){
		// e.g. launch failed for insufficient capacity and the NodeClaim is gone
		"gone": func(t *testing.T, ctx context.Context, r *v1.NodeClaim) {
			ExpectFinalizersRemoved(ctx, t, e.Client, r)
			ExpectDeleted(ctx, t, e.Client, r)
			ExpectNotFound(ctx, t, e.Client, r)
		},
		// its termination finalizer still runs
		"being deleted": func(t *testing.T, ctx context.Context, r *v1.NodeClaim) {
			ExpectDeleted(ctx, t, e.Client, r)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			a := f.candidate(t, "ice-a")
			r := replacement()
			before := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "drifted", ""))
			cmd := &Command{Method: disruption.MethodDrift, Decision: DecisionReplace,
				Candidates: []*v1.NodeClaim{a}, Replacements: []*v1.NodeClaim{r}, Explanation: "drifted"}
			if err := f.queue.StartCommand(f.ctx, cmd); err != nil {
				t.Fatal(err)
			}
			f.reconcile(t, a.Name)
			remove(t, f.ctx, r.DeepCopy())
			if d := f.reconcile(t, a.Name); d != 0 {
				t.Errorf("failed command requeued after %v", d)
			}
			expectRolledBack(t, f, a)
			if n := countEvents(f.events(), "Warning", EventDisruptionFailed, r.Name); n != 2 {
				t.Errorf("%d Warning %s events naming the replacement, want 2", n, EventDisruptionFailed)
			}
			if got := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "drifted", "")); got != before+1 {
				t.Errorf("karpenter_voluntary_disruption_queue_failures_total = %v, want %v", got, before+1)
			}
			if f.queue.Len() != 0 {
				t.Error("failed command still in the queue")
			}
		})
	}
}

func TestTimeoutRollsBackAndDeletesUninitializedReplacements(t *testing.T) {
	f := setup(t)
	a, b := f.candidate(t, "slow-a"), f.candidate(t, "slow-b")
	r1, r2 := replacement(), replacement()
	before := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "underutilized", "multi"))
	cmd := &Command{Method: disruption.MethodMultiNodeConsolidation, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{a, b}, Replacements: []*v1.NodeClaim{r1, r2}, Explanation: "cheaper"}
	if err := f.queue.StartCommand(f.ctx, cmd); err != nil {
		t.Fatal(err)
	}
	if f.queue.Timeout() != MinTimeout {
		t.Fatalf("timeout with one command = %v, want %v", f.queue.Timeout(), MinTimeout)
	}
	f.initialize(t, r1)
	if d := f.reconcile(t, a.Name); d != time.Second {
		t.Errorf("first requeue after %v, want 1s", d)
	}
	f.clk.Step(MinTimeout - 300*time.Millisecond)
	if d := f.reconcile(t, a.Name); d != 300*time.Millisecond {
		t.Errorf("requeue just before the timeout after %v, want the 300ms left", d)
	}
	if deleting(t, f.ctx, a) || !f.queue.Has(a.Name) {
		t.Fatal("command ended before its timeout")
	}
	f.clk.Step(300 * time.Millisecond)
	f.reconcile(t, a.Name)

	expectRolledBack(t, f, a)
	expectRolledBack(t, f, b)
	if !deleting(t, f.ctx, r2) {
		t.Error("replacement that never initialized was not deleted")
	}
	if deleting(t, f.ctx, r1) {
		t.Error("initialized replacement was deleted; it is usable capacity")
	}
	if n := countEvents(f.events(), "Warning", EventDisruptionFailed, r2.Name, "not initialized within 10m0s"); n != 4 {
		t.Errorf("%d Warning timeout events, want 4", n)
	}
	if got := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "underutilized", "multi")); got != before+1 {
		t.Errorf("karpenter_voluntary_disruption_queue_failures_total{consolidation_type=multi} = %v, want %v", got, before+1)
	}
}

func TestStartCommandErrorPartWayRollsBack(t *testing.T) {
	f := setup(t)
	a := f.candidate(t, "broken-a")
	good, bad := replacement(), replacement()
	bad.Spec.NodeClassRef.Name = "" // the API server rejects it
	failuresBefore := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "underutilized", "single"))
	cmd := &Command{Method: disruption.MethodSingleNodeConsolidation, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{a}, Replacements: []*v1.NodeClaim{good, bad}, Explanation: "cheaper"}
	err := f.queue.StartCommand(f.ctx, cmd)
	if err == nil {
		t.Fatal("StartCommand succeeded with an invalid replacement")
	}
	t.Logf("StartCommand: %v", err)
	if good.Name == "" {
		t.Fatal("the first replacement was not created; the test does not fail part-way")
	}
	if !deleting(t, f.ctx, good) {
		t.Error("replacement created before the error was not deleted")
	}
	expectRolledBack(t, f, a)
	if f.queue.Len() != 0 {
		t.Error("failed command left in the queue")
	}
	if n := countEvents(f.events(), "Warning", EventDisruptionFailed, "before it started"); n != 2 {
		t.Errorf("%d Warning events explaining the abandoned start, want 2", n)
	}
	if got := testutil.ToFloat64(QueueFailuresTotal.WithLabelValues("replace", "underutilized", "single")); got != failuresBefore {
		t.Errorf("queue failure counted for an error StartCommand returned")
	}

	// The candidate is free for the next decision.
	if err := f.queue.StartCommand(f.ctx, &Command{Method: disruption.MethodEmptiness, Decision: DecisionDelete,
		Candidates: []*v1.NodeClaim{a}}); err != nil {
		t.Fatalf("candidate of a rolled-back command cannot be disrupted again: %v", err)
	}
}

// leftover puts the disruption taint and condition on a candidate, as a
// command lost in a restart leaves them.
func leftover(t *testing.T, f *fixture, nc *v1.NodeClaim) {
	t.Helper()
	node := ExpectExists(f.ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint)
	ExpectApplied(f.ctx, t, e.Client, node)
	nc = ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeDisruptionReason, "Drifted", "lost")
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
}

func TestCleanupRemovesOrphansOnly(t *testing.T) {
	f := setup(t)
	orphan := f.candidate(t, "orphan")
	leftover(t, f, orphan)

	nodeDeleting := f.candidate(t, "node-deleting")
	leftover(t, f, nodeDeleting)
	n := ExpectExists(f.ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeDeleting.Name}})
	n.Finalizers = []string{v1.TerminationFinalizer}
	ExpectApplied(f.ctx, t, e.Client, n)
	ExpectDeleted(f.ctx, t, e.Client, n)

	claimDeleting := f.candidate(t, "claim-deleting")
	leftover(t, f, claimDeleting)
	ExpectDeleted(f.ctx, t, e.Client, claimDeleting) // held by its termination finalizer

	queued := f.candidate(t, "queued")
	if err := f.queue.StartCommand(f.ctx, &Command{Method: disruption.MethodDrift, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{queued}, Replacements: []*v1.NodeClaim{replacement()}, Explanation: "in flight"}); err != nil {
		t.Fatal(err)
	}

	if err := f.queue.CleanupOrphans(f.ctx); err != nil {
		t.Fatal(err)
	}
	if tainted(t, f.ctx, orphan.Name) || reasonCondition(t, f.ctx, orphan.Name).StatusConditions().Get(v1.ConditionTypeDisruptionReason) != nil {
		t.Error("orphaned taint or condition not removed")
	}
	if !tainted(t, f.ctx, nodeDeleting.Name) {
		t.Error("taint removed from a node being deleted")
	}
	if !tainted(t, f.ctx, claimDeleting.Name) || reasonCondition(t, f.ctx, claimDeleting.Name).StatusConditions().Get(v1.ConditionTypeDisruptionReason) == nil {
		t.Error("taint or condition removed although the NodeClaim is being deleted")
	}
	if !tainted(t, f.ctx, queued.Name) || !reasonCondition(t, f.ctx, queued.Name).StatusConditions().Get(v1.ConditionTypeDisruptionReason).IsTrue() {
		t.Error("taint or condition removed from a candidate in the queue")
	}
}

// Many commands at once, concurrently started and reconciled, do not disturb
// each other.
func TestConcurrentCommands(t *testing.T) {
	f := setup(t)
	const n = 12
	cmds := make([]*Command, n)
	for i := range cmds {
		c := f.candidate(t, "many-"+string(rune('a'+i)))
		cmds[i] = &Command{Method: disruption.MethodDrift, Decision: DecisionReplace,
			Candidates: []*v1.NodeClaim{c}, Replacements: []*v1.NodeClaim{replacement()}, Explanation: "drifted"}
		if i%2 == 1 {
			cmds[i].Decision, cmds[i].Replacements = DecisionDelete, nil
		}
	}
	run := func(f func(i int)) {
		var wg sync.WaitGroup
		for i := range cmds {
			wg.Add(1)
			go func(i int) { defer wg.Done(); f(i) }(i)
		}
		wg.Wait()
	}
	errs := make([]error, n)
	run(func(i int) { errs[i] = f.queue.StartCommand(f.ctx, cmds[i]) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	if f.queue.Len() != n {
		t.Fatalf("%d commands in the queue, want %d", f.queue.Len(), n)
	}
	for i := 0; i < n; i += 2 {
		f.initialize(t, cmds[i].Replacements[0])
	}
	run(func(i int) { _, errs[i] = f.queue.Reconcile(f.ctx, cmds[i].Candidates[0].Name) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("reconciling command %d: %v", i, err)
		}
		if !deleting(t, f.ctx, cmds[i].Candidates[0]) {
			t.Errorf("candidate of command %d not deleted", i)
		}
	}
	if f.queue.Len() != 0 {
		t.Errorf("%d commands left", f.queue.Len())
	}
}

// A candidate that someone else deleted while its command waited (e.g. it
// expired) is not counted as disrupted by the command; the other candidate is.
func TestCandidateDeletedElsewhereIsNotCounted(t *testing.T) {
	f := setup(t)
	a, b := f.candidate(t, "elsewhere-a"), f.candidate(t, "elsewhere-b")
	r := replacement()
	before := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("underutilized", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful))
	podsBefore := testutil.ToFloat64(metrics.PodsDisruptionInitiatedTotal.WithLabelValues("underutilized", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful))
	if err := f.queue.StartCommand(f.ctx, &Command{Method: disruption.MethodMultiNodeConsolidation,
		Decision: DecisionReplace, Candidates: []*v1.NodeClaim{a, b}, Replacements: []*v1.NodeClaim{r},
		Metrics: map[string]CandidateMetrics{
			a.Name: {ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ReschedulablePods: 4},
			b.Name: {ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ReschedulablePods: 3}}}); err != nil {
		t.Fatal(err)
	}
	ExpectDeleted(f.ctx, t, e.Client, a) // held by its finalizer
	f.initialize(t, r)
	f.reconcile(t, a.Name)
	if !deleting(t, f.ctx, b) || f.queue.Len() != 0 {
		t.Fatal("command did not finish")
	}
	if got := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues("underutilized", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful)); got != before+1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total = %v, want %v (only the candidate the queue deleted)", got, before+1)
	}
	if got := testutil.ToFloat64(metrics.PodsDisruptionInitiatedTotal.WithLabelValues("underutilized", "default", v1.CapacityTypeOnDemand, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeGraceful)); got != podsBefore+3 {
		t.Errorf("karpenter_pods_disruption_initiated_total = %v, want %v (the 3 pods of the candidate the queue deleted)", got, podsBefore+3)
	}
}

// overlapClient passes every call to the real API server; each NodeClaim Delete
// first waits (up to 5 s) until `want` Deletes are in flight together, and
// the most seen at once is recorded. Deletes made one after another never
// overlap: they each wait out the 5 s and leave the maximum at 1.
type overlapClient struct {
	client.Client
	want int

	mu            sync.Mutex
	cond          *sync.Cond
	inflight, max int
}

func (c *overlapClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok {
		c.mu.Lock()
		c.inflight++
		c.max = max(c.max, c.inflight)
		c.cond.Broadcast()
		deadline := time.Now().Add(5 * time.Second)
		for c.inflight < c.want && time.Now().Before(deadline) {
			// Woken by the next Delete or by the ticker below.
			c.cond.Wait()
		}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inflight--
			c.mu.Unlock()
		}()
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// A command's candidates are deleted concurrently (bounded), not one round trip
// after another: a command of a 2,000-node fleet's budget (200 nodes) held it
// for tens of seconds on a busy API server before the first drain began.
func TestDeleteCandidatesConcurrently(t *testing.T) {
	f := setup(t)
	oc := &overlapClient{Client: e.Client, want: 4}
	oc.cond = sync.NewCond(&oc.mu)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // wakes waiters so that the deadline is checked
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				oc.cond.Broadcast()
			}
		}
	}()
	q := NewQueue(oc, f.cluster, f.recorder, f.clk)
	var cands []*v1.NodeClaim
	for _, name := range []string{"par-a", "par-b", "par-c", "par-d", "par-e", "par-f"} {
		cands = append(cands, f.candidate(t, name))
	}
	cmd := &Command{Method: disruption.MethodEmptiness, Decision: DecisionDelete, Candidates: cands, Explanation: "nodes are empty"}
	if err := q.StartCommand(f.ctx, cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Reconcile(f.ctx, cands[0].Name); err != nil {
		t.Fatal(err)
	}
	for _, nc := range cands {
		if !deleting(t, f.ctx, nc) {
			t.Errorf("%s not deleted", nc.Name)
		}
	}
	if oc.max < oc.want {
		t.Errorf("at most %d NodeClaim deletes in flight at once, want %d: the candidates were deleted one after another", oc.max, oc.want)
	}
	if q.Has(cands[0].Name) {
		t.Error("command still in the queue after its candidates were deleted")
	}
}
