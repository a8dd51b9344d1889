package conditions_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/conditions"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

type fixture struct {
	ctx   context.Context
	clock *clocktesting.FakeClock
	reg   *prometheus.Registry
	// t0 is a whole second: the API server stores condition and deletion
	// times with second precision, so expected durations stay exact.
	t0 time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	cleanup := func() {
		ExpectCleanedUp(context.Background(), t, testEnv.Client, &v1.NodeClaimList{}, &v1.NodePoolList{}, &corev1.NodeList{})
	}
	cleanup()
	t.Cleanup(cleanup)
	t0 := time.Now().Truncate(time.Second)
	return &fixture{ctx: ctx, clock: clocktesting.NewFakeClock(t0), reg: prometheus.NewRegistry(), t0: t0}
}

func (f *fixture) controller(t *testing.T, kind conditions.Kind) *conditions.Controller {
	t.Helper()
	c, err := conditions.NewController(testEnv.Client, f.clock, f.reg, kind)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// at sets the fake clock to t0+d.
func (f *fixture) at(d time.Duration) { f.clock.SetTime(f.t0.Add(d)) }

func (f *fixture) cond(typ string, s metav1.ConditionStatus, reason string, after time.Duration) status.Condition {
	return status.Condition{Type: typ, Status: s, Reason: reason, Message: "set by a test", LastTransitionTime: metav1.NewTime(f.t0.Add(after))}
}

// series gathers the family name into a map from its label set, rendered as
// sorted "k=v" pairs joined by ",", to the series; the map is empty when the
// family has no series (reading through WithLabelValues would invent them).
func (f *fixture) series(t *testing.T, name string, want dto.MetricType) map[string]*dto.Metric {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if mf.GetType() != want {
			t.Fatalf("%s: type %v, want %v", name, mf.GetType(), want)
		}
		for _, m := range mf.GetMetric() {
			var pairs []string
			for _, lp := range m.GetLabel() {
				pairs = append(pairs, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(pairs)
			out[strings.Join(pairs, ",")] = m
		}
	}
	return out
}

// canonical sorts the "k=v" pairs of a label set written in any order.
func canonical(labels string) string {
	if labels == "" {
		return ""
	}
	pairs := strings.Split(labels, ",")
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func keys(m map[string]*dto.Metric) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// expectGauges fails unless the gauge family has exactly the series in want,
// with their values.
func (f *fixture) expectGauges(t *testing.T, name string, want map[string]float64) {
	t.Helper()
	got := f.series(t, name, dto.MetricType_GAUGE)
	if len(got) != len(want) {
		t.Errorf("%s: series %v, want %d series", name, keys(got), len(want))
	}
	for k, v := range want {
		m, ok := got[canonical(k)]
		if !ok {
			t.Errorf("%s: missing series {%s}; have %v", name, k, keys(got))
			continue
		}
		if m.GetGauge().GetValue() != v {
			t.Errorf("%s{%s} = %v, want %v", name, k, m.GetGauge().GetValue(), v)
		}
	}
}

// expectCounters is expectGauges for a counter family.
func (f *fixture) expectCounters(t *testing.T, name string, want map[string]float64) {
	t.Helper()
	got := f.series(t, name, dto.MetricType_COUNTER)
	if len(got) != len(want) {
		t.Errorf("%s: series %v, want %d series", name, keys(got), len(want))
	}
	for k, v := range want {
		m, ok := got[canonical(k)]
		if !ok {
			t.Errorf("%s: missing series {%s}; have %v", name, k, keys(got))
			continue
		}
		if m.GetCounter().GetValue() != v {
			t.Errorf("%s{%s} = %v, want %v", name, k, m.GetCounter().GetValue(), v)
		}
	}
}

type obs struct {
	count uint64
	sum   float64
}

// expectHistograms fails unless the histogram family has exactly the series
// in want, each with its sample count and sum, and Prometheus' default buckets.
func (f *fixture) expectHistograms(t *testing.T, name string, want map[string]obs) {
	t.Helper()
	got := f.series(t, name, dto.MetricType_HISTOGRAM)
	if len(got) != len(want) {
		t.Errorf("%s: series %v, want %d series", name, keys(got), len(want))
	}
	for k, w := range want {
		m, ok := got[canonical(k)]
		if !ok {
			t.Errorf("%s: missing series {%s}; have %v", name, k, keys(got))
			continue
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != w.count || h.GetSampleSum() != w.sum {
			t.Errorf("%s{%s}: count %d sum %v, want count %d sum %v", name, k, h.GetSampleCount(), h.GetSampleSum(), w.count, w.sum)
		}
		var bounds []float64
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if fmt.Sprint(bounds) != fmt.Sprint(prometheus.DefBuckets) {
			t.Errorf("%s: buckets %v, want %v", name, bounds, prometheus.DefBuckets)
		}
	}
}

// expectNoRequeue: the time gauges are read at scrape time, so nothing is
// requeued to refresh them.
func expectNoRequeue(t *testing.T, res reconcile.Result) {
	t.Helper()
	if res.RequeueAfter != 0 || res.Requeue {
		t.Errorf("requeued (%+v): the gauges are computed at scrape time", res)
	}
}

const (
	ncCount       = "operator_nodeclaim_status_condition_count"
	ncCurrent     = "operator_nodeclaim_status_condition_current_status_seconds"
	ncTransitions = "operator_nodeclaim_status_condition_transitions_total"
	ncTransition  = "operator_nodeclaim_status_condition_transition_seconds"
	ncTermCurrent = "operator_nodeclaim_termination_current_time_seconds"
	ncTermDur     = "operator_nodeclaim_termination_duration_seconds"
)

// nodeClaim is a NodeClaim of NodePool pool-a and KWOKNodeClass default,
// labelled with both, as the provisioner labels the NodeClaims it creates.
func nodeClaim(name string, conds ...status.Condition) *v1.NodeClaim {
	return fixtures.NodeClaim(name,
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "pool-a", kwok.NodeClassLabelKey: "default"}),
		fixtures.WithClaimConditions(conds...))
}

// ncExtra are the extra labels every nodeclaim series of nodeClaim carries.
const ncExtra = "karpenter_kwok_sh_kwoknodeclass=default,karpenter_sh_nodepool=pool-a"

// A NodeClaim's Launched condition goes Unknown -> True: before, the gauges
// carry the Unknown state and the condition's appearance is counted; after,
// the gauges moved to True (the Unknown series is gone), the transition is
// counted once under the new status and reason, and the histogram observes how
// long Unknown held, from the two lastTransitionTimes. A further reconcile
// without a change counts nothing new.
func TestNodeClaimConditionFlip(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeClaimKind(kwok.NodeClassLabelKey))
	nc := nodeClaim("flip", f.cond(v1.ConditionTypeLaunched, metav1.ConditionUnknown, "AwaitingLaunch", 0))
	ExpectApplied(f.ctx, t, testEnv.Client, nc)

	f.at(30 * time.Second)
	expectNoRequeue(t, ExpectReconciled(f.ctx, t, ctrl, nc))
	unknown := "name=flip,namespace=,reason=AwaitingLaunch,status=Unknown,type=Launched," + ncExtra
	f.expectGauges(t, ncCount, map[string]float64{unknown: 1})
	f.expectGauges(t, ncCurrent, map[string]float64{unknown: 30})
	f.expectCounters(t, ncTransitions, map[string]float64{
		"reason=AwaitingLaunch,status=Unknown,type=Launched," + ncExtra: 1,
	})
	f.expectHistograms(t, ncTransition, map[string]obs{})

	// A scrape reads the clock: the gauge grows without a reconcile, and a
	// reconcile without a change counts nothing.
	f.at(40 * time.Second)
	f.expectGauges(t, ncCurrent, map[string]float64{unknown: 40})
	expectNoRequeue(t, ExpectReconciled(f.ctx, t, ctrl, nc))
	f.expectCounters(t, ncTransitions, map[string]float64{
		"reason=AwaitingLaunch,status=Unknown,type=Launched," + ncExtra: 1,
	})

	nc.Status.Conditions = []status.Condition{f.cond(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", 45*time.Second)}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	f.at(60 * time.Second)
	expectNoRequeue(t, ExpectReconciled(f.ctx, t, ctrl, nc))
	launched := "name=flip,namespace=,reason=Launched,status=True,type=Launched," + ncExtra
	f.expectGauges(t, ncCount, map[string]float64{launched: 1})
	f.expectGauges(t, ncCurrent, map[string]float64{launched: 15})
	wantTransitions := map[string]float64{
		"reason=AwaitingLaunch,status=Unknown,type=Launched," + ncExtra: 1,
		"reason=Launched,status=True,type=Launched," + ncExtra:          1,
	}
	f.expectCounters(t, ncTransitions, wantTransitions)
	wantDurations := map[string]obs{"status=Unknown,to_status=True,type=Launched," + ncExtra: {count: 1, sum: 45}}
	f.expectHistograms(t, ncTransition, wantDurations)

	f.at(70 * time.Second)
	expectNoRequeue(t, ExpectReconciled(f.ctx, t, ctrl, nc))
	f.expectCounters(t, ncTransitions, wantTransitions)
	f.expectHistograms(t, ncTransition, wantDurations)
	f.expectGauges(t, ncCurrent, map[string]float64{launched: 25})
}

// A NodeClaim held by a finalizer is deleted: while terminating it has a
// termination gauge (clock minus deletionTimestamp); once gone (NotFound) every
// per-object gauge series is deleted and the termination duration is observed
// once, while the counter keeps its history. A second NodeClaim's series are
// untouched by the first one's deletion.
func TestNodeClaimDeletionRemovesSeries(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeClaimKind(kwok.NodeClassLabelKey))
	nc := nodeClaim("doomed", f.cond(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", 0))
	nc.Finalizers = []string{"karpenter.sh/termination"}
	other := nodeClaim("other", f.cond(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", 0))
	ExpectApplied(f.ctx, t, testEnv.Client, nc, other)
	f.at(5 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	ExpectReconciled(f.ctx, t, ctrl, other)
	doomed := "name=doomed,namespace=,reason=Launched,status=True,type=Launched," + ncExtra
	kept := "name=other,namespace=,reason=Launched,status=True,type=Launched," + ncExtra
	f.expectGauges(t, ncCount, map[string]float64{doomed: 1, kept: 1})
	f.expectGauges(t, ncTermCurrent, map[string]float64{})

	ExpectDeleted(f.ctx, t, testEnv.Client, nc)
	nc = ExpectExists(f.ctx, t, testEnv.Client, nc)
	if nc.DeletionTimestamp == nil {
		t.Fatal("finalized NodeClaim has no deletionTimestamp")
	}
	deletedAt := nc.DeletionTimestamp.Time
	f.clock.SetTime(deletedAt.Add(20 * time.Second))
	ExpectReconciled(f.ctx, t, ctrl, nc)
	f.expectGauges(t, ncTermCurrent, map[string]float64{"name=doomed,namespace=," + ncExtra: 20})
	f.expectHistograms(t, ncTermDur, map[string]obs{})

	ExpectFinalizersRemoved(f.ctx, t, testEnv.Client, nc)
	ExpectNotFound(f.ctx, t, testEnv.Client, nc)
	f.clock.SetTime(deletedAt.Add(32 * time.Second))
	res := ExpectReconciled(f.ctx, t, ctrl, nc)
	if res.RequeueAfter != 0 {
		t.Errorf("gone object requeued after %v", res.RequeueAfter)
	}
	f.expectGauges(t, ncCount, map[string]float64{kept: 1})
	// other's gauge reads the clock at the scrape, not its last reconcile.
	f.expectGauges(t, ncCurrent, map[string]float64{kept: deletedAt.Add(32 * time.Second).Sub(f.t0).Seconds()})
	f.expectGauges(t, ncTermCurrent, map[string]float64{})
	f.expectHistograms(t, ncTermDur, map[string]obs{ncExtra: {count: 1, sum: 32}})
	f.expectCounters(t, ncTransitions, map[string]float64{"reason=Launched,status=True,type=Launched," + ncExtra: 2})

	// Reconciling the gone object again observes nothing more.
	ExpectReconciled(f.ctx, t, ctrl, nc)
	f.expectHistograms(t, ncTermDur, map[string]obs{ncExtra: {count: 1, sum: 32}})
}

// A NodePool: its families are operator_nodepool_*, with no extra labels; its
// Ready condition going False -> True (with a reason change) moves both gauges,
// counts the transition under True and observes how long False held; the
// condition that did not change (ValidationSucceeded) counts only its
// appearance.
func TestNodePoolConditions(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodePoolKind())
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}},
		Status: v1.NodePoolStatus{Conditions: []status.Condition{
			f.cond(v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "ValidationSucceeded", 0),
			f.cond(status.ConditionReady, metav1.ConditionFalse, "NodeClassNotReady", 0),
		}},
	}
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	f.at(10 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, np)
	valid := "name=pool,namespace=,reason=ValidationSucceeded,status=True,type=ValidationSucceeded"
	notReady := "name=pool,namespace=,reason=NodeClassNotReady,status=False,type=Ready"
	f.expectGauges(t, "operator_nodepool_status_condition_count", map[string]float64{valid: 1, notReady: 1})
	f.expectGauges(t, "operator_nodepool_status_condition_current_status_seconds", map[string]float64{valid: 10, notReady: 10})

	np.Status.Conditions[1] = f.cond(status.ConditionReady, metav1.ConditionTrue, "Ready", 90*time.Second)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, np)
	f.at(100 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, np)
	ready := "name=pool,namespace=,reason=Ready,status=True,type=Ready"
	f.expectGauges(t, "operator_nodepool_status_condition_count", map[string]float64{valid: 1, ready: 1})
	f.expectGauges(t, "operator_nodepool_status_condition_current_status_seconds", map[string]float64{valid: 100, ready: 10})
	f.expectCounters(t, "operator_nodepool_status_condition_transitions_total", map[string]float64{
		"reason=ValidationSucceeded,status=True,type=ValidationSucceeded": 1,
		"reason=NodeClassNotReady,status=False,type=Ready":                1,
		"reason=Ready,status=True,type=Ready":                             1,
	})
	f.expectHistograms(t, "operator_nodepool_status_condition_transition_seconds", map[string]obs{
		"status=False,to_status=True,type=Ready": {count: 1, sum: 90},
	})
	// The kind-less families carry the same observations labelled by group
	// and kind instead of the kind's extra labels.
	kindless := "group=karpenter.sh,kind=NodePool,"
	f.expectGauges(t, "operator_status_condition_count", map[string]float64{
		kindless + valid: 1, kindless + ready: 1,
	})
	f.expectGauges(t, "operator_status_condition_current_status_seconds", map[string]float64{
		kindless + valid: 100, kindless + ready: 10,
	})
	f.expectCounters(t, "operator_status_condition_transitions_total", map[string]float64{
		kindless + "reason=ValidationSucceeded,status=True,type=ValidationSucceeded": 1,
		kindless + "reason=NodeClassNotReady,status=False,type=Ready":                1,
		kindless + "reason=Ready,status=True,type=Ready":                             1,
	})
	f.expectHistograms(t, "operator_status_condition_transition_seconds", map[string]obs{
		kindless + "status=False,to_status=True,type=Ready": {count: 1, sum: 90},
	})

	// Its NodeClaim-kind sibling in the same registry stays empty.
	f.controller(t, conditions.NodeClaimKind(kwok.NodeClassLabelKey))
	f.expectGauges(t, ncCount, map[string]float64{})
}

// A Node: its kubelet Ready condition is read like ours, the families are
// operator_node_*, and its extra labels include karpenter_sh_initialized. When
// the node's labels change (initialized set), the gauges move to the new label
// values and the series under the old values are gone; when Ready flips the
// histogram observes how long it was False.
func TestNodeConditionsAndLabelChange(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeKind(kwok.NodeClassLabelKey))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.NodePoolLabelKey: "pool-a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			LastTransitionTime: metav1.NewTime(f.t0), LastHeartbeatTime: metav1.NewTime(f.t0),
		}}},
	}
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	f.at(7 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, n)
	base := "karpenter_kwok_sh_kwoknodeclass=,karpenter_sh_nodepool=pool-a,"
	notReady := base + "karpenter_sh_initialized=,name=n1,namespace=,reason=KubeletNotReady,status=False,type=Ready"
	f.expectGauges(t, "operator_node_status_condition_count", map[string]float64{notReady: 1})
	f.expectGauges(t, "operator_node_status_condition_current_status_seconds", map[string]float64{notReady: 7})

	n.Labels[v1.NodeInitializedLabelKey] = "true"
	n.Status.Conditions[0] = corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastTransitionTime: metav1.NewTime(f.t0.Add(12 * time.Second)), LastHeartbeatTime: metav1.NewTime(f.t0.Add(12 * time.Second)),
	}
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	f.at(20 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, n)
	ready := base + "karpenter_sh_initialized=true,name=n1,namespace=,reason=KubeletReady,status=True,type=Ready"
	f.expectGauges(t, "operator_node_status_condition_count", map[string]float64{ready: 1})
	f.expectGauges(t, "operator_node_status_condition_current_status_seconds", map[string]float64{ready: 8})
	f.expectHistograms(t, "operator_node_status_condition_transition_seconds", map[string]obs{
		base + "karpenter_sh_initialized=true,status=False,to_status=True,type=Ready": {count: 1, sum: 12},
	})
	f.expectCounters(t, "operator_node_status_condition_transitions_total", map[string]float64{
		base + "karpenter_sh_initialized=,reason=KubeletNotReady,status=False,type=Ready": 1,
		base + "karpenter_sh_initialized=true,reason=KubeletReady,status=True,type=Ready": 1,
	})
}

// A NodeClaim deleted and recreated under the same name between two
// reconciles (never seen NotFound) starts afresh: its predecessor's gauge
// series are dropped and its conditions are not compared with the
// predecessor's, so no transition duration is observed across the two.
func TestNodeClaimRecreatedStartsAfresh(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeClaimKind(kwok.NodeClassLabelKey))
	nc := nodeClaim("again", f.cond(v1.ConditionTypeLaunched, metav1.ConditionFalse, "LaunchFailed", 0))
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	f.at(10 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)

	ExpectDeleted(f.ctx, t, testEnv.Client, nc)
	ExpectNotFound(f.ctx, t, testEnv.Client, nc)
	nc = nodeClaim("again", f.cond(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", 15*time.Second))
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	f.at(20 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	launched := "name=again,namespace=,reason=Launched,status=True,type=Launched," + ncExtra
	f.expectGauges(t, ncCount, map[string]float64{launched: 1})
	f.expectGauges(t, ncCurrent, map[string]float64{launched: 5})
	f.expectHistograms(t, ncTransition, map[string]obs{})
	f.expectCounters(t, ncTransitions, map[string]float64{
		"reason=LaunchFailed,status=False,type=Launched," + ncExtra: 1,
		"reason=Launched,status=True,type=Launched," + ncExtra:      1,
	})
}

// A provider NodeClass kind gets its own operator_<kind>_* families, named by
// its lower-case kind, as upstream's operator_ec2nodeclass_* are.
func TestNodeClassKindConditions(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeClassKind(&kwokv1alpha1.KWOKNodeClass{}, kwokv1alpha1.Group, "KWOKNodeClass"))
	nc := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "class"},
		Status:     kwokv1alpha1.KWOKNodeClassStatus{Conditions: []status.Condition{f.cond(status.ConditionReady, metav1.ConditionTrue, "Ready", 0)}},
	}
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	f.at(5 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	f.expectGauges(t, "operator_kwoknodeclass_status_condition_count",
		map[string]float64{"name=class,namespace=,reason=Ready,status=True,type=Ready": 1})
}
