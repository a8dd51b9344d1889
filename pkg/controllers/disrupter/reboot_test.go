package disrupter_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/reboot"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// countingCloud is the fixture's KWOK provider whose Reboot is counted and,
// with accept set, accepted without the node ever coming back (no new boot
// ID): a reboot that does not heal.
type countingCloud struct {
	*kwok.CloudProvider
	accept  bool
	reboots atomic.Int32
}

func (c *countingCloud) Reboot(ctx context.Context, nc *v1.NodeClaim, op string) error {
	c.reboots.Add(1)
	if c.accept {
		return nil
	}
	return c.CloudProvider.Reboot(ctx, nc, op)
}

var _ cloudprovider.CloudProvider = (*countingCloud)(nil)

// rebootController is the reboot controller over the fixture's cluster.
func (f *fixture) rebootController(cp cloudprovider.CloudProvider) *reboot.Controller {
	drainer := termination.NewController(testEnv.Client, cp, f.clock, f.recorder).Drainer
	return reboot.NewController(testEnv.Client, cp, drainer, f.clock, f.recorder)
}

func reconcileReboot(t *testing.T, f *fixture, c *reboot.Controller, nc *v1.NodeClaim) reconcile.Result {
	t.Helper()
	res, err := c.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rebootFault gives the node KWOK's reboot-clearable fault, from the fake
// clock's now, and a boot ID.
func (f *fixture) rebootFault(t *testing.T, node *corev1.Node, bootID string) {
	t.Helper()
	n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy())
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: kwok.RebootRequiredCondition, Status: corev1.ConditionTrue,
		Reason: "Wedged", LastTransitionTime: metav1.NewTime(f.clock.Now())})
	n.Status.NodeInfo.BootID = bootID
	if err := testEnv.Client.Status().Update(f.ctx, n); err != nil {
		t.Fatal(err)
	}
}

func rebootingCondition(t *testing.T, f *fixture, nc *v1.NodeClaim) (*v1.NodeClaim, string, string) {
	t.Helper()
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	c := got.StatusConditions().Get(v1.ConditionTypeRebooting)
	if c == nil {
		return got, "", ""
	}
	return got, string(c.Status), c.Reason
}

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// A node whose repair policy asks for a reboot (KWOK's KWOKRebootRequired)
// is rebooted in place: repair requests it (Rebooting=True/RebootRequested,
// the policy's drain bound, DisruptionReason Unhealthy) without replacing or
// deleting anything; the reboot controller taints the node
// karpenter.sh/rebooting, records its boot ID, asks the provider (KWOK gives
// the node a new boot ID), moves to RebootIssued with Initialized Unknown,
// and on seeing the new boot ID and Ready ends it RebootSucceeded, the taint
// gone, counted in the three reboot metrics. A node rebooted twice within a
// day is replaced the third time.
func TestRepairRebootsNodeInPlace(t *testing.T) {
	f := newFixture(t)
	f.withRepair()
	f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable, withTerminationFinalizer)
	f.rebootFault(t, sick, "boot-1")
	cp := &countingCloud{CloudProvider: f.cp}
	rc := f.rebootController(cp)

	decisions := disrupter.DecisionsTotal.WithLabelValues("reboot", "unhealthy", "")
	decisionsBefore := testutil.ToFloat64(decisions)
	succeeded := reboot.RebootsTotal.WithLabelValues(reboot.ResultSucceeded)
	succeededBefore := testutil.ToFloat64(succeeded)
	durations := histogramCount(t, reboot.RebootDurationSeconds.WithLabelValues(reboot.ResultSucceeded))
	recoveries := histogramCount(t, reboot.RebootRecoveryDurationSeconds)

	f.clock.Step(31 * time.Second)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the reboot requested, got %+v", r)
	}
	got, st, reason := rebootingCondition(t, f, nc)
	if st != "True" || reason != v1.RebootReasonRequested {
		t.Fatalf("Rebooting %s/%s, want True/%s", st, reason, v1.RebootReasonRequested)
	}
	if got.Annotations[v1.RebootTerminationGracePeriodAnnotationKey] != "1m0s" {
		t.Fatalf("reboot drain bound %q, want KWOK's policy's 1m0s", got.Annotations[v1.RebootTerminationGracePeriodAnnotationKey])
	}
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonUnhealthy) {
		t.Fatalf("DisruptionReason %+v", c)
	}
	if got.DeletionTimestamp != nil {
		t.Fatal("a rebooted NodeClaim was deleted")
	}
	if after := testutil.ToFloat64(decisions); after != decisionsBefore+1 {
		t.Fatalf("decisions_total{reboot,unhealthy,\"\"} %v -> %v", decisionsBefore, after)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil || len(ncs.Items) != 2 {
		t.Fatalf("a reboot launches nothing: %d NodeClaims (%v)", len(ncs.Items), err)
	}
	// The node is rebooting: the next pass leaves it alone.
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("a rebooting node was disrupted again: %+v", r)
	}

	// Tainted and drained first; the drain of an empty node still waits
	// MinDrainTime for late bindings.
	if res := reconcileReboot(t, f, rc, nc); res.RequeueAfter == 0 {
		t.Fatal("want the reboot to wait for the minimum drain time")
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, sick.DeepCopy()); !hasTaint(n, v1.RebootingTaintKey) {
		t.Fatal("the node is not tainted karpenter.sh/rebooting")
	}
	if cp.reboots.Load() != 0 {
		t.Fatal("rebooted before the drain ended")
	}
	f.clock.Step(reboot.MinDrainTime)
	reconcileReboot(t, f, rc, nc)
	if cp.reboots.Load() != 1 {
		t.Fatalf("provider asked %d times, want once", cp.reboots.Load())
	}
	got, st, reason = rebootingCondition(t, f, nc)
	if st != "True" || reason != v1.RebootReasonIssued {
		t.Fatalf("Rebooting %s/%s, want True/%s", st, reason, v1.RebootReasonIssued)
	}
	if got.Annotations[v1.RebootPreBootIDAnnotationKey] != "boot-1" {
		t.Fatalf("pre-boot ID %q, want boot-1", got.Annotations[v1.RebootPreBootIDAnnotationKey])
	}
	if c := got.StatusConditions().Get(v1.ConditionTypeInitialized); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1.RebootReasonRebooting {
		t.Fatalf("Initialized %+v, want Unknown/Rebooting", c)
	}
	n := ExpectExists(f.ctx, t, testEnv.Client, sick.DeepCopy())
	if n.Status.NodeInfo.BootID == "boot-1" {
		t.Fatal("KWOK did not give the node a new boot ID")
	}
	if _, ok := n.Labels[v1.NodeInitializedLabelKey]; ok {
		t.Fatal("a rebooting node is still labelled initialized")
	}

	f.clock.Step(30 * time.Second)
	reconcileReboot(t, f, rc, nc)
	got, st, reason = rebootingCondition(t, f, nc)
	if st != "False" || reason != v1.RebootReasonSucceeded {
		t.Fatalf("Rebooting %s/%s, want False/%s", st, reason, v1.RebootReasonSucceeded)
	}
	if _, ok := got.Annotations[v1.RebootPreBootIDAnnotationKey]; ok {
		t.Fatal("the pre-boot ID outlived the reboot")
	}
	if got.StatusConditions().Get(v1.ConditionTypeDisruptionReason) != nil {
		t.Fatal("DisruptionReason outlived the reboot")
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, sick.DeepCopy()); hasTaint(n, v1.RebootingTaintKey) {
		t.Fatal("the karpenter.sh/rebooting taint outlived the reboot")
	}
	if evs := f.events(); !containsEvent(evs, "Normal RebootObserved") {
		t.Fatalf("want a RebootObserved event, got %q", evs)
	}
	if after := testutil.ToFloat64(succeeded); after != succeededBefore+1 {
		t.Fatalf("nodes_reboots_total{succeeded} %v -> %v", succeededBefore, after)
	}
	if c := histogramCount(t, reboot.RebootDurationSeconds.WithLabelValues(reboot.ResultSucceeded)); c != durations+1 {
		t.Fatalf("reboot_duration_seconds{succeeded} count %d -> %d", durations, c)
	}
	if c := histogramCount(t, reboot.RebootRecoveryDurationSeconds); c != recoveries+1 {
		t.Fatalf("reboot_recovery_duration_seconds count %d -> %d", recoveries, c)
	}

	// The fault is still there: its toleration runs again from the end of
	// the reboot, then a second reboot.
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("rebooted again within the toleration after a reboot: %+v", r)
	}
	f.clock.Step(31 * time.Second)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want a second reboot, got %+v", r)
	}
	reconcileReboot(t, f, rc, nc)
	f.clock.Step(reboot.MinDrainTime)
	reconcileReboot(t, f, rc, nc)
	reconcileReboot(t, f, rc, nc)
	if _, st, reason = rebootingCondition(t, f, nc); st != "False" || reason != v1.RebootReasonSucceeded || cp.reboots.Load() != 2 {
		t.Fatalf("second reboot: Rebooting %s/%s after %d provider calls", st, reason, cp.reboots.Load())
	}
	// Two reboots within a day did not heal it: the third repair replaces.
	f.clock.Step(31 * time.Second)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the node replaced, got %+v", r)
	}
	ExpectReconciledQueue(t, f, "sick")
	if got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy()); got.DeletionTimestamp == nil {
		t.Fatal("a node rebooted twice without healing was not replaced")
	}
	if cp.reboots.Load() != 2 {
		t.Fatalf("provider asked %d times, want 2", cp.reboots.Load())
	}
}

// A reboot the provider accepts but after which the node never reports a new
// boot ID fails once ObservationWindow has passed: RebootFailed, the taint
// removed, and the NodeClaim deleted (so the node is replaced) with its drain
// bounded as the reboot's was; counted as recovery_timeout. A restart of the
// controller between the provider's call and the new boot does not reboot
// twice.
func TestRebootThatDoesNotHealReplacesTheNode(t *testing.T) {
	f := newFixture(t)
	f.withRepair()
	f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable, withTerminationFinalizer)
	f.rebootFault(t, sick, "boot-1")
	cp := &countingCloud{CloudProvider: f.cp, accept: true}
	timeouts := reboot.RebootsTotal.WithLabelValues(reboot.ResultRecoveryTimeout)
	timeoutsBefore := testutil.ToFloat64(timeouts)

	f.clock.Step(31 * time.Second)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the reboot requested, got %+v", r)
	}
	rc := f.rebootController(cp)
	reconcileReboot(t, f, rc, nc)
	f.clock.Step(reboot.MinDrainTime)
	reconcileReboot(t, f, rc, nc)
	if _, st, reason := rebootingCondition(t, f, nc); st != "True" || reason != v1.RebootReasonIssued || cp.reboots.Load() != 1 {
		t.Fatalf("Rebooting %s/%s after %d provider calls", st, reason, cp.reboots.Load())
	}
	// A new process: the same boot ID, nothing issued again while it waits.
	rc = f.rebootController(cp)
	f.clock.Step(reboot.ObservationWindow - time.Minute)
	reconcileReboot(t, f, rc, nc)
	if got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy()); got.DeletionTimestamp != nil || cp.reboots.Load() != 1 {
		t.Fatalf("within the window: deleted %v, provider calls %d", got.DeletionTimestamp != nil, cp.reboots.Load())
	}
	f.clock.Step(2 * time.Minute)
	reconcileReboot(t, f, rc, nc)
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if got.DeletionTimestamp == nil {
		t.Fatal("a node that did not come back from its reboot was not replaced")
	}
	deadline, err := time.Parse(time.RFC3339, got.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	if err != nil || deadline.After(f.clock.Now().Add(time.Minute)) {
		t.Fatalf("termination timestamp %q (%v), want at most the reboot's 1m bound from now", got.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey], err)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, sick.DeepCopy()); hasTaint(n, v1.RebootingTaintKey) {
		t.Fatal("the karpenter.sh/rebooting taint outlived the reboot")
	}
	if evs := f.events(); !containsEvent(evs, "Warning RebootFailed") || !containsEvent(evs, "replacing the node") {
		t.Fatalf("want a RebootFailed warning, got %q", evs)
	}
	if after := testutil.ToFloat64(timeouts); after != timeoutsBefore+1 {
		t.Fatalf("nodes_reboots_total{recovery_timeout} %v -> %v", timeoutsBefore, after)
	}
}

// A reboot whose drain bound annotation is not a duration fails without
// replacing the node (invalid_request), and the provider is not asked.
func TestRebootInvalidRequestFailsWithoutReplacing(t *testing.T) {
	f := newFixture(t)
	sick, nc := f.node(t, "sick", "c-4x-amd64-linux", notConsolidatable, func(nc *v1.NodeClaim) {
		nc.Annotations = map[string]string{v1.RebootTerminationGracePeriodAnnotationKey: "soon"}
		nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonRequested, "test")
	})
	f.rebootFault(t, sick, "boot-1")
	cp := &countingCloud{CloudProvider: f.cp}
	invalid := reboot.RebootsTotal.WithLabelValues(reboot.ResultInvalidRequest)
	before := testutil.ToFloat64(invalid)
	reconcileReboot(t, f, f.rebootController(cp), nc)
	got, st, reason := rebootingCondition(t, f, nc)
	if st != "False" || reason != v1.RebootReasonFailed || got.DeletionTimestamp != nil || cp.reboots.Load() != 0 {
		t.Fatalf("Rebooting %s/%s, deleted %v, provider calls %d", st, reason, got.DeletionTimestamp != nil, cp.reboots.Load())
	}
	if msg := got.StatusConditions().Get(v1.ConditionTypeRebooting).Message; !strings.Contains(msg, "soon") {
		t.Fatalf("message %q does not name the bad value", msg)
	}
	if after := testutil.ToFloat64(invalid); after != before+1 {
		t.Fatalf("nodes_reboots_total{invalid_request} %v -> %v", before, after)
	}
}
