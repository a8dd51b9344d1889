package disrupter_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// withRepair rebuilds the fixture's controller with the NodeRepair gate on.
func (f *fixture) withRepair() {
	f.ctrl = disrupter.NewController(testEnv.Client, f.cluster, f.prov, f.cp, f.queue, f.recorder, f.clock, disrupter.Options{NodeRepair: true})
}

// setNotReady makes the node's Ready condition False from the fake clock's now.
func (f *fixture) setNotReady(t *testing.T, node *corev1.Node) {
	t.Helper()
	n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy())
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionFalse
			n.Status.Conditions[i].Reason = "KubeletNotReady"
			n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(f.clock.Now())
		}
	}
	if err := testEnv.Client.Status().Update(f.ctx, n); err != nil {
		t.Fatal(err)
	}
}

func withTerminationFinalizer(nc *v1.NodeClaim) { nc.Finalizers = []string{v1.TerminationFinalizer} }

// A node Ready=False past KWOK's 10-minute toleration is repaired at once (no
// validation delay): its NodeClaim gets DisruptionReason Unhealthy, the queue
// deletes it with the policy's forceful drain bound stamped as its termination
// timestamp, and the repair metrics count it.
func TestRepairDeletesUnhealthyNodePastToleration(t *testing.T) {
	f := newFixture(t)
	f.withRepair()
	busy, _ := f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	f.pod(t, "db", busy.Name, "1", nil)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable, withTerminationFinalizer)
	f.setNotReady(t, sick)

	repaired := orchestration.NodeClaimsUnhealthyDisruptedTotal.WithLabelValues("ready", "default", v1.CapacityTypeOnDemand, "", metrics.TerminationModeForceful)
	repairedBefore := testutil.ToFloat64(repaired)
	decisions := disrupter.DecisionsTotal.WithLabelValues("delete", "unhealthy", "")
	decisionsBefore := testutil.ToFloat64(decisions)

	// Within the toleration: nothing.
	f.clock.Step(9 * time.Minute)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("repaired within the toleration: %+v", r)
	}
	f.clock.Step(2 * time.Minute)
	done := f.startPass(t)
	if r := f.finish(t, done); !r.acted || r.err != nil {
		t.Fatalf("want the repair started at once, got %+v", r)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonUnhealthy) {
		t.Fatalf("DisruptionReason %+v", c)
	}
	if after := testutil.ToFloat64(decisions); after != decisionsBefore+1 {
		t.Fatalf("decisions_total{delete,unhealthy,\"\"} %v -> %v", decisionsBefore, after)
	}
	// The Unhealthy budget is exported with the gate (NotReady nodes do not
	// consume it).
	if v := gaugeSeries(t, disrupter.NodePoolNodesConsumingBudgets, map[string]string{"nodepool": "default", "reason": "Unhealthy"}); v != 0 {
		t.Fatalf("nodes_consuming_budgets{default,Unhealthy} = %v, want 0", v)
	}
	ExpectReconciledQueue(t, f, "sick")
	got = ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if got.DeletionTimestamp == nil {
		t.Fatal("the unhealthy NodeClaim was not deleted")
	}
	deadline, err := time.Parse(time.RFC3339, got.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	if err != nil || deadline.After(f.clock.Now()) {
		t.Fatalf("termination timestamp %q (%v), want at most now (a forceful drain)", got.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey], err)
	}
	if after := testutil.ToFloat64(repaired); after != repairedBefore+1 {
		t.Fatalf("nodeclaims_unhealthy_disrupted_total{ready,default,on-demand,\"\",forceful} %v -> %v", repairedBefore, after)
	}
	ExpectExists(f.ctx, t, testEnv.Client, busy.DeepCopy())
}

// More than 20% of the NodePool's nodes unhealthy: repair stops there and
// says so in upstream's NodeRepairBlocked warning.
func TestRepairStoppedInNodePoolWithManyUnhealthyNodes(t *testing.T) {
	f := newFixture(t)
	f.withRepair()
	a, ncA := f.node(t, "sick-a", "c-4x-amd64-linux", notConsolidatable)
	b, ncB := f.node(t, "sick-b", "c-4x-amd64-linux", notConsolidatable)
	f.setNotReady(t, a)
	f.setNotReady(t, b)
	f.clock.Step(11 * time.Minute)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	if evs := f.events(); !containsEvent(evs, "Warning NodeRepairBlocked") || !containsEvent(evs, "2 of its 2 nodes are unhealthy") {
		t.Fatalf("want a NodeRepairBlocked warning, got %q", evs)
	}
	for _, nc := range []*v1.NodeClaim{ncA, ncB} {
		got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
		if got.DeletionTimestamp != nil {
			t.Fatalf("%s deleted", nc.Name)
		}
		if c := got.StatusConditions().Get(disrupter.ConditionTypeDisruptionBlocked); !c.IsTrue() || c.Reason != "NodeRepairBlocked" {
			t.Fatalf("DisruptionBlocked %+v", c)
		}
	}
}

// An unhealthy node whose pods fit nowhere else is replaced first: the
// replacement NodeClaim is created and the node stays until it initializes.
func TestRepairLaunchesReplacementFirst(t *testing.T) {
	f := newFixture(t)
	f.withRepair()
	busy, _ := f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	f.pod(t, "db", busy.Name, "3500m", nil)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable)
	f.pod(t, "web", sick.Name, "3", nil)
	f.setNotReady(t, sick)
	f.clock.Step(11 * time.Minute)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the repair started, got %+v", r)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil || len(ncs.Items) != 3 {
		t.Fatalf("want both nodes and a replacement, got %d (%v)", len(ncs.Items), err)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if got.DeletionTimestamp != nil {
		t.Fatal("the unhealthy node was deleted before its replacement initialized")
	}
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonUnhealthy) {
		t.Fatalf("DisruptionReason %+v", c)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, sick.DeepCopy()); !hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("the unhealthy node is not tainted karpenter.sh/disrupted")
	}
}

// staticAtLimit makes the fixture's NodePool static (2 replicas, at most 2
// nodes) and Ready.
func (f *fixture) staticAtLimit(t *testing.T) {
	t.Helper()
	// A NodePool is static from its creation: the fixture's is made again.
	old := ExpectExists(f.ctx, t, testEnv.Client, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	if err := testEnv.Client.Delete(f.ctx, old); err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: old.Spec}
	np.Spec.Replicas = ptr.To[int64](2)
	np.Spec.Limits = v1.Limits{v1.ResourceNodes: resource.MustParse("2")}
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	Eventually(t, 10*time.Second, func() error { return testEnv.Client.Create(f.ctx, np) })
	np = ExpectExists(f.ctx, t, testEnv.Client, np)
	for _, c := range []string{v1.ConditionTypeValidationSucceeded, v1.ConditionTypeNodeClassReady, v1.ConditionTypeNodeRegistrationHealthy} {
		np.StatusConditions().SetTrue(c)
	}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, np)
}

// An unhealthy node of a static NodePool at its node limit cannot have its
// replacement launched first: without TerminateFirstRepair it waits; with
// it, it is deleted first (the pool refills after), counted in
// karpenter_voluntary_disruption_terminate_first_decisions_total.
func TestRepairTerminatesFirstInAStaticPoolAtItsLimit(t *testing.T) {
	f := newFixture(t)
	f.staticAtLimit(t)
	f.node(t, "ok", "c-4x-amd64-linux", notConsolidatable)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable, withTerminationFinalizer)
	f.setNotReady(t, sick)
	f.clock.Step(11 * time.Minute)
	f.withRepair()
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("without TerminateFirstRepair a static pool at its limit waits, got %+v", r)
	}
	first := disrupter.TerminateFirstDecisionsTotal.WithLabelValues("default", "unhealthy", "static-at-limit")
	before := testutil.ToFloat64(first)
	f.ctrl = disrupter.NewController(testEnv.Client, f.cluster, f.prov, f.cp, f.queue, f.recorder, f.clock, disrupter.Options{NodeRepair: true, TerminateFirstRepair: true})
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the node terminated first, got %+v", r)
	}
	ExpectReconciledQueue(t, f, "sick")
	if got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy()); got.DeletionTimestamp == nil {
		t.Fatal("the unhealthy node was not deleted first")
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil || len(ncs.Items) != 2 {
		t.Fatalf("want no replacement launched first: %d NodeClaims (%v)", len(ncs.Items), err)
	}
	if after := testutil.ToFloat64(first); after != before+1 {
		t.Fatalf("terminate_first_decisions_total{default,unhealthy,static-at-limit} %v -> %v", before, after)
	}
}
