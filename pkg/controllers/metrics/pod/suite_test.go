package pod_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/pod"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

const (
	unbound   = "karpenter_pods_unbound_time_seconds"
	unstarted = "karpenter_pods_unstarted_time_seconds"
	bound     = "karpenter_pods_bound_duration_seconds"
	startup   = "karpenter_pods_startup_duration_seconds"

	provisioningUnbound   = "karpenter_pods_provisioning_unbound_time_seconds"
	provisioningUnstarted = "karpenter_pods_provisioning_unstarted_time_seconds"
	undecided             = "karpenter_pods_provisioning_scheduling_undecided_time_seconds"
	provisioningBound     = "karpenter_pods_provisioning_bound_duration_seconds"
	provisioningStartup   = "karpenter_pods_provisioning_startup_duration_seconds"
)

type fixture struct {
	ctx   context.Context
	clock *clocktesting.FakeClock
	reg   *prometheus.Registry
	ctrl  *pod.Controller
	times *state.PodSchedulingTimes
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cleanup := func() {
		c := context.Background()
		_ = testEnv.Client.DeleteAllOf(c, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		ExpectCleanedUp(c, t, testEnv.Client, &corev1.PodList{})
	}
	cleanup()
	t.Cleanup(cleanup)
	f := &fixture{ctx: ctx, clock: clocktesting.NewFakeClock(time.Now()), reg: prometheus.NewRegistry()}
	f.times = state.NewPodSchedulingTimes(f.clock)
	ctrl, err := pod.NewController(testEnv.Client, f.clock, f.reg, f.times)
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	return f
}

// pendingPod creates an unbound pod, Pending with no conditions, as the API
// server stores a new pod before the kube-scheduler's first attempt (the phase
// is written explicitly: ExpectApplied writes the status it is given).
func (f *fixture) pendingPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p := fixtures.Pod(name, fixtures.WithPhase(corev1.PodPending))
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	p = ExpectExists(f.ctx, t, testEnv.Client, p)
	if p.Status.Phase != corev1.PodPending {
		t.Fatalf("new pod phase %q, want Pending", p.Status.Phase)
	}
	return p
}

// setStatus writes the pod's status as a kubelet or scheduler would (envtest
// runs neither): phase, and conditions True at creation+offset.
func (f *fixture) setStatus(t *testing.T, p *corev1.Pod, phase corev1.PodPhase, trueAfter map[corev1.PodConditionType]time.Duration) {
	t.Helper()
	p.Status.Phase = phase
	p.Status.Conditions = nil
	for ct, d := range trueAfter {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(p.CreationTimestamp.Add(d)),
		})
	}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, p)
}

// at sets the fake clock to the pod's creation plus d.
func (f *fixture) at(p *corev1.Pod, d time.Duration) { f.clock.SetTime(p.CreationTimestamp.Add(d)) }

// family returns the gathered metric family, nil when it has no series.
func (f *fixture) family(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// expectGauge fails unless the gauge has exactly one series, labelled with
// exactly the pod's name and namespace, with value want.
func (f *fixture) expectGauge(t *testing.T, name string, p *corev1.Pod, want float64) {
	t.Helper()
	mf := f.family(t, name)
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: want exactly one series, got %v", name, mf)
	}
	m := mf.GetMetric()[0]
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	// The unbound gauges also say whether the pod claims DRA resources.
	want2 := map[string]string{"name": p.Name, "namespace": p.Namespace}
	if name == unbound || name == provisioningUnbound {
		want2["dynamic_resources"] = "false"
	}
	if fmt.Sprint(got) != fmt.Sprint(want2) {
		t.Errorf("%s: labels %v, want exactly %v", name, got, want2)
	}
	if v := m.GetGauge().GetValue(); v != want {
		t.Errorf("%s: value %v, want %v", name, v, want)
	}
}

func (f *fixture) expectNoSeries(t *testing.T, name string) {
	t.Helper()
	if mf := f.family(t, name); mf != nil && len(mf.GetMetric()) > 0 {
		t.Errorf("%s: want no series, have %v", name, mf.GetMetric())
	}
}

// expectHistogram fails unless the bound-duration histogram (one series,
// dynamic_resources="false") has count samples summing to sum.
func (f *fixture) expectHistogram(t *testing.T, count uint64, sum float64) *dto.Histogram {
	t.Helper()
	mf := f.family(t, bound)
	if count == 0 && mf == nil {
		return nil // labelled by dynamic_resources: no series before a first observation
	}
	if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: want one histogram series, got %v", bound, mf)
	}
	h := mf.GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != count || h.GetSampleSum() != sum {
		t.Errorf("%s: count %d sum %v, want count %d sum %v", bound, h.GetSampleCount(), h.GetSampleSum(), count, sum)
	}
	return h
}

// expectSummary fails unless the unlabelled summary has count samples summing
// to sum.
func (f *fixture) expectSummary(t *testing.T, count uint64, sum float64) *dto.Summary {
	t.Helper()
	mf := f.family(t, startup)
	if mf == nil || mf.GetType() != dto.MetricType_SUMMARY || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: want one summary series, got %v", startup, mf)
	}
	s := mf.GetMetric()[0].GetSummary()
	if s.GetSampleCount() != count || s.GetSampleSum() != sum {
		t.Errorf("%s: count %d sum %v, want count %d sum %v", startup, s.GetSampleCount(), s.GetSampleSum(), count, sum)
	}
	return s
}

func expectRequeue(t *testing.T, res reconcile.Result, want time.Duration) {
	t.Helper()
	if res.RequeueAfter != want {
		t.Errorf("RequeueAfter %v, want %v", res.RequeueAfter, want)
	}
}

// A pod's whole life: while unbound both gauges carry its age on the
// controller's clock at every scrape, without a requeue; binding observes the
// bound duration once from the condition's transition time and drops the
// unbound gauge; becoming Ready observes the startup duration once and drops
// the unstarted gauge; later reconciles observe nothing; deletion leaves no
// series.
func TestPodLifecycleObservedOnce(t *testing.T) {
	f := newFixture(t)
	p := f.pendingPod(t, "web")

	f.at(p, 42*time.Second)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	f.expectGauge(t, unbound, p, 42)
	f.expectGauge(t, unstarted, p, 42)
	f.expectHistogram(t, 0, 0)
	f.expectSummary(t, 0, 0)

	// A scrape reads the clock: the gauges grow without any reconcile.
	f.at(p, 52*time.Second)
	f.expectGauge(t, unbound, p, 52)
	f.expectGauge(t, unstarted, p, 52)

	// Bound 47 s after creation, seen at 60 s: the condition's time counts.
	f.setStatus(t, p, corev1.PodPending, map[corev1.PodConditionType]time.Duration{corev1.PodScheduled: 47 * time.Second})
	f.at(p, 60*time.Second)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	h := f.expectHistogram(t, 1, 47)
	// Upstream's buckets: 40 s is the bound below 47 s, 50 s the one above.
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 50 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: count %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if n := len(h.GetBucket()); n != len(metrics.DurationBuckets()) {
		t.Errorf("%d buckets, want %d", n, len(metrics.DurationBuckets()))
	}
	f.expectNoSeries(t, unbound)
	f.expectGauge(t, unstarted, p, 60)
	f.expectSummary(t, 0, 0)

	// Running and Ready 75 s after creation, seen at 90 s.
	f.setStatus(t, p, corev1.PodRunning, map[corev1.PodConditionType]time.Duration{
		corev1.PodScheduled: 47 * time.Second, corev1.PodReady: 75 * time.Second,
	})
	f.at(p, 90*time.Second)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	f.expectSummary(t, 1, 75)
	f.expectNoSeries(t, unstarted)
	f.expectNoSeries(t, unbound)

	// Nothing is observed twice, however often the pod is reconciled.
	for i := 0; i < 3; i++ {
		f.clock.Step(time.Minute)
		expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	}
	f.expectHistogram(t, 1, 47)
	f.expectSummary(t, 1, 75)
	f.expectNoSeries(t, unbound)
	f.expectNoSeries(t, unstarted)

	ExpectDeleted(f.ctx, t, testEnv.Client, p)
	ExpectNotFound(f.ctx, t, testEnv.Client, p)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	f.expectNoSeries(t, unbound)
	f.expectNoSeries(t, unstarted)
	f.expectHistogram(t, 1, 47)
	f.expectSummary(t, 1, 75)
}

// A pod deleted while still unbound loses both gauge series at its NotFound
// reconcile and is never observed; another pod's series stay.
func TestDeletedUnboundPodLeavesNoSeries(t *testing.T) {
	f := newFixture(t)
	gone := f.pendingPod(t, "gone")
	stays := f.pendingPod(t, "stays")
	f.at(gone, 30*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, gone)
	ExpectReconciled(f.ctx, t, f.ctrl, stays)
	for _, name := range []string{unbound, unstarted} {
		if mf := f.family(t, name); mf == nil || len(mf.GetMetric()) != 2 {
			t.Fatalf("%s: want 2 series before the deletion, got %v", name, mf)
		}
	}

	ExpectDeleted(f.ctx, t, testEnv.Client, gone)
	ExpectNotFound(f.ctx, t, testEnv.Client, gone)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, gone), 0)

	age := f.clock.Since(stays.CreationTimestamp.Time).Seconds()
	f.expectGauge(t, unbound, stays, age)
	f.expectGauge(t, unstarted, stays, age)
	f.expectHistogram(t, 0, 0)
	f.expectSummary(t, 0, 0)
}

// A pod first seen already bound and Ready (one that was running when the
// controller started) is never observed and gets no gauges: a restart must not
// re-observe every running pod.
func TestPodFirstSeenRunningIsNotObserved(t *testing.T) {
	f := newFixture(t)
	p := f.pendingPod(t, "old")
	f.setStatus(t, p, corev1.PodRunning, map[corev1.PodConditionType]time.Duration{
		corev1.PodScheduled: 2 * time.Second, corev1.PodReady: 5 * time.Second,
	})
	f.at(p, time.Hour)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)

	// Losing readiness later (a crashing container) is not a new start either.
	f.setStatus(t, p, corev1.PodRunning, map[corev1.PodConditionType]time.Duration{corev1.PodScheduled: 2 * time.Second})
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	f.setStatus(t, p, corev1.PodRunning, map[corev1.PodConditionType]time.Duration{
		corev1.PodScheduled: 2 * time.Second, corev1.PodReady: 20 * time.Minute,
	})
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)

	f.expectHistogram(t, 0, 0)
	f.expectSummary(t, 0, 0)
	f.expectNoSeries(t, unbound)
	f.expectNoSeries(t, unstarted)
}

// A pending pod that fails before being bound loses both gauges without an
// observation: it was never bound nor started.
func TestPodFailedWhileWaitingDropsGauges(t *testing.T) {
	f := newFixture(t)
	p := f.pendingPod(t, "doomed")
	f.at(p, 10*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, p)
	f.expectGauge(t, unbound, p, 10)
	f.expectGauge(t, unstarted, p, 10)

	f.setStatus(t, p, corev1.PodFailed, nil)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, p), 0)
	f.expectNoSeries(t, unbound)
	f.expectNoSeries(t, unstarted)
	f.expectHistogram(t, 0, 0)
	f.expectSummary(t, 0, 0)
}

// A pod recreated under the same name between two reconciles (no NotFound in
// between) starts afresh: the new pod's gauges use its own creation time and
// its binding is observed from its own timestamps.
func TestRecreatedPodStartsAfresh(t *testing.T) {
	f := newFixture(t)
	first := f.pendingPod(t, "db-0")
	f.at(first, 30*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, first)

	ExpectDeleted(f.ctx, t, testEnv.Client, first)
	ExpectNotFound(f.ctx, t, testEnv.Client, first)
	second := f.pendingPod(t, "db-0")
	if second.UID == first.UID {
		t.Fatal("recreated pod kept its UID")
	}
	f.setStatus(t, second, corev1.PodPending, map[corev1.PodConditionType]time.Duration{corev1.PodScheduled: 3 * time.Second})
	f.at(second, 8*time.Second)
	expectRequeue(t, ExpectReconciled(f.ctx, t, f.ctrl, second), 0)

	// Seen bound at once, so the new pod has nothing to observe for binding
	// and its unstarted gauge is its own age.
	f.expectHistogram(t, 0, 0)
	f.expectNoSeries(t, unbound)
	f.expectGauge(t, unstarted, second, 8)
}

// Registered in a manager, the controller follows pods through its watch:
// a new pending pod gets its gauges without anyone calling Reconcile.
func TestRegisteredControllerWatchesPods(t *testing.T) {
	f := newFixture(t)
	mgr := env.NewManager(t, testEnv.Config, testEnv.Scheme)
	if err := f.ctrl.Register(mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(f.ctx, t, mgr)
	// The clock stands still, so the age the watch-driven reconcile sets is
	// known once the pod's creation time is.
	p := f.pendingPod(t, "watched")
	age := f.clock.Since(p.CreationTimestamp.Time).Seconds()
	Eventually(t, 10*time.Second, func() error {
		mf := f.family(t, unbound)
		if mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge().GetValue() != age {
			return fmt.Errorf("unbound gauge: %v", mf)
		}
		return nil
	})
	f.expectGauge(t, unbound, p, age)
	f.expectGauge(t, unstarted, p, age)
}

// The provisioning_* variants count from the provisioner's own moments
// (cluster state's PodSchedulingTimes) instead of the pod's creation: while no
// decision is made the undecided gauge grows from when the provisioner first
// saw the pod; once a decision placed it, the provisioning unbound/unstarted
// gauges grow from that moment; binding and readiness observe the provisioning
// histograms once; then the provisioner's record of the pod is dropped.
func TestProvisioningLatenciesCountFromTheProvisionersMoments(t *testing.T) {
	f := newFixture(t)
	p := f.pendingPod(t, "web")
	key := client.ObjectKeyFromObject(p)

	f.at(p, 5*time.Second)
	f.times.Ack(p)
	f.at(p, 8*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, p)
	f.expectGauge(t, undecided, p, 3)
	f.expectNoSeries(t, provisioningUnbound)

	f.at(p, 10*time.Second)
	f.times.Decided([]*corev1.Pod{p}, nil)
	f.at(p, 30*time.Second)
	f.expectNoSeries(t, undecided)
	f.expectGauge(t, provisioningUnbound, p, 20)
	f.expectGauge(t, provisioningUnstarted, p, 20)

	f.setStatus(t, p, corev1.PodPending, map[corev1.PodConditionType]time.Duration{corev1.PodScheduled: 47 * time.Second})
	f.at(p, 50*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, p)
	f.expectNoSeries(t, provisioningUnbound)
	f.expectGauge(t, provisioningUnstarted, p, 40)
	if h := f.histogram(t, provisioningBound); h.GetSampleCount() != 1 || h.GetSampleSum() != 37 {
		t.Errorf("%s: count %d sum %v, want 1 and 37", provisioningBound, h.GetSampleCount(), h.GetSampleSum())
	}

	f.setStatus(t, p, corev1.PodRunning, map[corev1.PodConditionType]time.Duration{corev1.PodScheduled: 47 * time.Second, corev1.PodReady: 60 * time.Second})
	f.at(p, 70*time.Second)
	ExpectReconciled(f.ctx, t, f.ctrl, p)
	f.expectNoSeries(t, provisioningUnstarted)
	if h := f.histogram(t, provisioningStartup); h.GetSampleCount() != 1 || h.GetSampleSum() != 50 {
		t.Errorf("%s: count %d sum %v, want 1 and 50", provisioningStartup, h.GetSampleCount(), h.GetSampleSum())
	}
	if acked, decided, schedulable := f.times.Times(key); !acked.IsZero() || !decided.IsZero() || !schedulable.IsZero() {
		t.Errorf("the provisioner's record of a started pod is kept: %v %v %v", acked, decided, schedulable)
	}
}

// histogram returns the only series of a histogram family.
func (f *fixture) histogram(t *testing.T, name string) *dto.Histogram {
	t.Helper()
	mf := f.family(t, name)
	if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s: want one histogram series, got %v", name, mf)
	}
	return mf.GetMetric()[0].GetHistogram()
}
