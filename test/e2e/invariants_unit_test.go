package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// These tests feed the invariant watcher synthetic events (no cluster) to
// show that each check catches what it is meant to catch, and lets the
// legitimate cases pass.

var watcherNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func testWatcher() *invariantWatcher {
	return newInvariantWatcher("default", func() time.Time { return watcherNow })
}

// runningPod is a Ready pod app=web on node, whose UID is its name.
func runningPod(name, node string, ann map[string]string) *corev1.Pod {
	return fixtures.Pod(name, fixtures.WithUID(name), fixtures.WithLabels(map[string]string{"app": "web"}), fixtures.WithAnnotations(ann),
		fixtures.OnNode(node), fixtures.WithPhase(corev1.PodRunning),
		fixtures.WithPodConditions(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
}

// evicted is p as the API server leaves it after an Eviction: marked with a
// DisruptionTarget condition and terminating.
func evicted(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	ts := metav1.NewTime(watcherNow)
	p.DeletionTimestamp = &ts
	return p
}

func scaledDown(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	ts := metav1.NewTime(watcherNow)
	p.DeletionTimestamp = &ts
	return p
}

func kwokNode(name string, disrupted bool) *corev1.Node {
	opts := []fixtures.NodeOption{fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"})}
	if disrupted {
		opts = append(opts, fixtures.WithTaints(v1.DisruptedNoScheduleTaint))
	}
	return fixtures.Node(name, opts...)
}

func claimFor(node string, created time.Time, expireAfter string) *v1.NodeClaim {
	return fixtures.NodeClaim("nc-"+node, fixtures.CreatedAt(created), fixtures.WithExpireAfter(expireAfter), fixtures.WithNodeName(node))
}

func expectViolations(t *testing.T, w *invariantWatcher, want int, mentions ...string) {
	t.Helper()
	if len(w.violations) != want {
		t.Fatalf("%d violations %q, want %d", len(w.violations), w.violations, want)
	}
	for _, m := range mentions {
		if !strings.Contains(strings.Join(w.violations, "\n"), m) {
			t.Errorf("violations %q do not mention %q", w.violations, m)
		}
	}
}

func TestWatcherPDB(t *testing.T) {
	w := testWatcher()
	w.nodeChanged(kwokNode("n1", true), false)
	w.pdbChanged(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntStr(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, false)
	pods := []*corev1.Pod{runningPod("a", "n1", nil), runningPod("b", "n1", nil), runningPod("c", "n1", nil), runningPod("d", "n1", nil)}
	for _, p := range pods {
		w.podChanged(nil, p)
	}
	// A scale-down below the PDB is the owner's doing, not Karpenter's.
	w.podChanged(pods[3], scaledDown(pods[3]))
	w.podDeleted(scaledDown(pods[3]))
	expectViolations(t, w, 0)
	// 3 healthy, minAvailable 2: one eviction is fine.
	w.podChanged(pods[0], evicted(pods[0]))
	expectViolations(t, w, 0)
	// A second one leaves 1.
	w.podChanged(pods[1], evicted(pods[1]))
	expectViolations(t, w, 1, "PDB default/web", "EvictionByEvictionAPI", "leaving 1 healthy pods, below the 2")
	// A pod deleted outright (grace period 0) because its node went away counts too.
	w.nodeChanged(kwokNode("n1", true), true)
	w.podDeleted(pods[2])
	expectViolations(t, w, 2, "node n1 deleted")
	if w.karpenterRemovals != 3 {
		t.Errorf("karpenterRemovals = %d, want 3", w.karpenterRemovals)
	}
}

func TestWatcherDesiredHealthy(t *testing.T) {
	for _, tc := range []struct {
		min, max *intstr.IntOrString
		expected int
		want     int
	}{
		{min: ptrIntStr(intstr.FromInt32(3)), expected: 10, want: 3},
		{min: ptrIntStr(intstr.FromString("50%")), expected: 5, want: 3},
		{max: ptrIntStr(intstr.FromInt32(1)), expected: 6, want: 5},
		{max: ptrIntStr(intstr.FromString("25%")), expected: 6, want: 4},
	} {
		pdb := &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: tc.min, MaxUnavailable: tc.max}}
		if got, ok := desiredHealthy(pdb, tc.expected); !ok || got != tc.want {
			t.Errorf("desiredHealthy(min %v, max %v, expected %d) = %d, want %d", tc.min, tc.max, tc.expected, got, tc.want)
		}
	}
}

func TestWatcherDoNotDisrupt(t *testing.T) {
	dnd := map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	w := testWatcher()
	for _, n := range []string{"fresh", "old", "grace"} {
		w.nodeChanged(kwokNode(n, true), false)
	}
	w.nodeClaimChanged(claimFor("fresh", watcherNow.Add(-time.Hour), "720h"))
	w.nodeClaimChanged(claimFor("old", watcherNow.Add(-time.Hour), "30m"))
	grace := claimFor("grace", watcherNow.Add(-time.Hour), "720h")
	grace.Annotations = map[string]string{v1.NodeClaimTerminationTimestampAnnotationKey: watcherNow.Add(-time.Second).Format(time.RFC3339)}
	w.nodeClaimChanged(grace)

	// Expired node, and terminationGracePeriod over: allowed.
	for _, n := range []string{"old", "grace"} {
		p := runningPod("dnd-"+n, n, dnd)
		w.podChanged(nil, p)
		w.podChanged(p, evicted(p))
	}
	// A pod without the annotation on the fresh node: allowed.
	plain := runningPod("plain", "fresh", nil)
	w.podChanged(nil, plain)
	w.podChanged(plain, evicted(plain))
	expectViolations(t, w, 0)

	p := runningPod("dnd-fresh", "fresh", dnd)
	w.podChanged(nil, p)
	w.podChanged(p, evicted(p))
	expectViolations(t, w, 1, "do-not-disrupt pod default/dnd-fresh", "node fresh")
}

func TestWatcherBudget(t *testing.T) {
	w := testWatcher()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
	w.nodePoolChanged(np)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		w.nodeChanged(kwokNode(n, false), false)
		w.nodeClaimChanged(claimFor(n, watcherNow.Add(-time.Hour), "720h"))
	}
	// Expired nodes do not count: expiration is not budgeted.
	w.nodeClaimChanged(claimFor("n4", watcherNow.Add(-time.Hour), "1m"))
	w.nodeChanged(kwokNode("n4", true), false)
	w.nodeChanged(kwokNode("n1", true), false)
	w.nodeChanged(kwokNode("n2", true), false)
	expectViolations(t, w, 0)
	w.nodeChanged(kwokNode("n3", true), false)
	expectViolations(t, w, 1, "3 nodes disrupting at once [n1 n2 n3], budget allows 2")
	if w.maxDisrupting != 3 {
		t.Errorf("maxDisrupting = %d, want 3", w.maxDisrupting)
	}

	// Per reason: no Drifted disruption is allowed.
	w.nodeChanged(kwokNode("n3", false), false)
	drifted := claimFor("n2", watcherNow.Add(-time.Hour), "720h")
	drifted.StatusConditions().SetTrueWithReason(v1.ConditionTypeDisruptionReason, string(v1.DisruptionReasonDrifted), "drifted")
	w.nodeClaimChanged(drifted)
	expectViolations(t, w, 2, "1 nodes disrupting for Drifted at once, budget allows 0")
}

func TestWatcherBudgetPercent(t *testing.T) {
	for _, tc := range []struct {
		nodes string
		total int
		want  int
	}{{"10%", 11, 2}, {"10%", 10, 1}, {"0%", 10, 0}, {"100%", 3, 3}, {"3", 100, 3}} {
		if got, ok := budgetNodes(tc.nodes, tc.total); !ok || got != tc.want {
			t.Errorf("budgetNodes(%q, %d) = %d, want %d", tc.nodes, tc.total, got, tc.want)
		}
	}
	np := &v1.NodePool{}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Schedule: ptrString("@daily"), Duration: &metav1.Duration{Duration: time.Hour}}}
	if all, _ := budgetLimits(np, 10); all != -1 {
		t.Errorf("scheduled budgets are not checked, got limit %d", all)
	}
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }
func ptrString(s string) *string                         { return &s }

// TestWatcherDrainAndGrace: a draining node (deletionTimestamp set, object
// still there) keeps its pods healthy; a node deleted under running pods
// removes them all at once; pods the pod garbage collector fails count as
// removed; and after terminationGracePeriod nothing is held against Karpenter.
func TestWatcherDrainAndGrace(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ExpectedPods: 3},
	}
	setup := func() (*invariantWatcher, []*corev1.Pod) {
		w := testWatcher()
		w.pdbChanged(pdb, false)
		draining := kwokNode("n1", true)
		ts := metav1.NewTime(watcherNow)
		draining.DeletionTimestamp = &ts
		w.nodeChanged(draining, false)
		w.nodeClaimChanged(claimFor("n1", watcherNow.Add(-time.Hour), "720h"))
		var pods []*corev1.Pod
		for _, n := range []string{"a", "b", "c"} {
			p := runningPod(n, "n1", nil)
			w.podChanged(nil, p)
			pods = append(pods, p)
		}
		return w, pods
	}

	w, pods := setup()
	w.podChanged(pods[0], evicted(pods[0]))
	expectViolations(t, w, 0)

	w, _ = setup()
	w.nodeChanged(kwokNode("n1", true), true)
	expectViolations(t, w, 1, "node n1 deleted")

	w, pods = setup()
	gc := pods[0].DeepCopy()
	gc.Status.Phase = corev1.PodFailed
	gc.Status.Conditions = append(gc.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC"})
	w.podChanged(pods[1], evicted(pods[1]))
	w.podChanged(pods[0], gc)
	expectViolations(t, w, 1, "pod a removed (DeletionByPodGC)")
	if w.karpenterRemovals != 2 {
		t.Errorf("karpenterRemovals = %d, want 2", w.karpenterRemovals)
	}

	w, pods = setup()
	nc := claimFor("n1", watcherNow.Add(-time.Hour), "720h")
	nc.Annotations = map[string]string{v1.NodeClaimTerminationTimestampAnnotationKey: watcherNow.Format(time.RFC3339)}
	w.nodeClaimChanged(nc)
	w.nodeChanged(kwokNode("n1", true), true)
	expectViolations(t, w, 0)
}

// TestWatcherPodDeleted: pods that vanish with a delete event only (no
// terminating update seen, as with grace period 0 or a missed watch) are
// judged too: a voluntary removal of a do-not-disrupt pod or of a pod its
// PDB protects is a violation; a deletion that is not Karpenter's is not.
func TestWatcherPodDeleted(t *testing.T) {
	dnd := map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	w := testWatcher()
	w.nodeChanged(kwokNode("n1", true), false)
	w.nodeClaimChanged(claimFor("n1", watcherNow.Add(-time.Hour), "720h"))
	w.pdbChanged(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, false)
	plain := runningPod("plain", "n1", nil)
	plain.Labels = map[string]string{"app": "other"}
	protected := runningPod("protected", "n1", nil)
	guarded := runningPod("guarded", "n1", dnd)
	guarded.Labels = map[string]string{"app": "other"}
	for _, p := range []*corev1.Pod{plain, protected, guarded} {
		w.podChanged(nil, p)
	}
	// Deleted by its owner (no eviction mark, node alive): not Karpenter's.
	w.podDeleted(scaledDown(plain))
	expectViolations(t, w, 0)
	// Evicted and deleted in one go: the PDB allows no unavailable pod.
	w.podDeleted(evicted(protected))
	expectViolations(t, w, 1, "PDB default/web: pod protected removed (EvictionByEvictionAPI)")
	// A do-not-disrupt pod on a NodeClaim neither expired nor past its grace.
	w.podDeleted(evicted(guarded))
	expectViolations(t, w, 2, "do-not-disrupt pod default/guarded removed (EvictionByEvictionAPI) from node n1")
	if w.karpenterRemovals != 2 {
		t.Errorf("karpenterRemovals = %d, want 2", w.karpenterRemovals)
	}
	// The same deletion seen again (a relist) is not judged twice.
	w.podDeleted(evicted(guarded))
	expectViolations(t, w, 2)
}

// recordingTB records what a test would have reported and runs its
// cleanups on demand, to show the watcher's cleanup assertion fails a test.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()                     {}
func (r *recordingTB) Logf(string, ...interface{}) {}
func (r *recordingTB) Cleanup(f func())            { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...interface{}) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestWatcherAssertsInCleanup: a violation recorded after the test body's
// Assert still fails the test when it ends, and one already reported is not
// reported twice.
func TestWatcherAssertsInCleanup(t *testing.T) {
	dnd := map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	rec := &recordingTB{TB: t}
	w := testWatcher()
	w.assertOnCleanup(rec)
	w.nodeChanged(kwokNode("n1", true), false)
	a := runningPod("a", "n1", dnd)
	b := runningPod("b", "n1", dnd)
	w.podChanged(nil, a)
	w.podChanged(nil, b)
	w.podDeleted(evicted(a))
	w.Assert(rec) // the body's assertion
	if len(rec.errors) != 1 {
		t.Fatalf("body Assert reported %q, want one violation", rec.errors)
	}
	// After the body: seen only by the cleanup.
	w.podDeleted(evicted(b))
	rec.end()
	if len(rec.errors) != 2 || !strings.Contains(rec.errors[1], "do-not-disrupt pod default/b") {
		t.Fatalf("after cleanup the test reported %q, want the late violation for pod b once more", rec.errors)
	}
}

// The fleet benchmark's counts come from the watcher's view: live pods of the
// namespace (terminating ones and other namespaces left out), those Running,
// nodes, and NodeClaims not yet deleted.
func TestWatcherFleetCounts(t *testing.T) {
	w := testWatcher()
	w.nodeChanged(kwokNode("a", false), false)
	w.nodeChanged(kwokNode("b", false), false)
	w.nodeChanged(kwokNode("c", false), false)
	w.nodeChanged(kwokNode("c", false), true)
	w.nodeClaimChanged(claimFor("a", watcherNow, "Never"))
	w.nodeClaimChanged(claimFor("b", watcherNow, "Never"))
	w.nodeClaimChanged(claimFor("c", watcherNow, "Never"))
	w.nodeClaimDeleted(claimFor("c", watcherNow, "Never"))
	w.podChanged(nil, runningPod("p1", "a", nil))
	w.podChanged(nil, runningPod("p2", "b", nil))
	pending := runningPod("p3", "", nil)
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	w.podChanged(nil, pending)
	w.podChanged(nil, scaledDown(runningPod("p4", "a", nil)))
	other := runningPod("p5", "a", nil)
	other.Namespace = "kube-system"
	w.podChanged(nil, other)
	want := fleetCounts{pods: 3, running: 2, nodes: 2, nodeClaims: 2}
	if got := w.fleetCounts("default"); got != want {
		t.Fatalf("fleetCounts = %+v, want %+v", got, want)
	}
	// A NodeClaim name used again counts again.
	w.nodeClaimChanged(claimFor("c", watcherNow, "Never"))
	if got := w.fleetCounts("default").nodeClaims; got != 3 {
		t.Fatalf("nodeClaims after re-creation = %d, want 3", got)
	}
}
