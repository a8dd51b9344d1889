package podevents_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func reconcileNode(f *fixture, t *testing.T, node string) reconcile.Result {
	t.Helper()
	res, err := f.ctrl.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
	if err != nil {
		t.Fatalf("reconciling node %s: %v", node, err)
	}
	return res
}

// TestNodeToStamp: which pod events concern a node's NodeClaim.
func TestNodeToStamp(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mk := func(node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := pod("p", node)
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	deleting := func(p *corev1.Pod) { ts := metav1.NewTime(now); p.DeletionTimestamp = &ts }
	old := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)) }
	labelled := func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }

	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		deleted  bool
		want     string
	}{
		{name: "created already bound", cur: mk("n1"), want: "n1"},
		{name: "created unbound", cur: mk("")},
		{name: "existing bound pod replayed at start-up", cur: mk("n1", old)},
		{name: "bound by the scheduler", old: mk(""), cur: mk("n1"), want: "n1"},
		{name: "still pending", old: mk(""), cur: mk("", labelled)},
		{name: "succeeded", old: mk("n1", phase(corev1.PodRunning)), cur: mk("n1", phase(corev1.PodSucceeded)), want: "n1"},
		{name: "failed", old: mk("n1", phase(corev1.PodRunning)), cur: mk("n1", phase(corev1.PodFailed)), want: "n1"},
		{name: "already terminal", old: mk("n1", phase(corev1.PodFailed)), cur: mk("n1", phase(corev1.PodFailed), labelled)},
		{name: "started terminating", old: mk("n1"), cur: mk("n1", deleting), want: "n1"},
		{name: "still terminating", old: mk("n1", deleting), cur: mk("n1", deleting, labelled)},
		{name: "running pod relabelled", old: mk("n1", phase(corev1.PodRunning)), cur: mk("n1", phase(corev1.PodRunning), labelled)},
		{name: "deleted from a node", cur: mk("n1", old), deleted: true, want: "n1"},
		{name: "deleted while pending", cur: mk(""), deleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podevents.NodeToStamp(tc.old, tc.cur, tc.deleted, now); got != tc.want {
				t.Errorf("NodeToStamp = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStampsNodeClaimByProviderIDAndOwner: the NodeClaim is found through the
// Node's owner reference and, before registration added one, through the
// provider ID; lastPodEventTime is the clock's time.
func TestStampsNodeClaimByProviderIDAndOwner(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	byID, _ := launched(f, t, "by-id", false)
	byOwner, _ := launched(f, t, "by-owner", true)
	for _, node := range []string{"by-id", "by-owner"} {
		if res := reconcileNode(f, t, node); res.RequeueAfter != 0 {
			t.Errorf("%s: unexpected requeue %v", node, res.RequeueAfter)
		}
	}
	for _, nc := range []*v1.NodeClaim{byID, byOwner} {
		if got := lastPodEvent(f, t, nc); !got.Equal(f.clk.Now()) {
			t.Errorf("%s: lastPodEventTime %v, want %v", nc.Name, got, f.clk.Now())
		}
	}
}

// TestDedupesWritesWithinTheWindow: with a positive consolidateAfter, a
// second event inside DedupeWindow is not written at once but requeued to the
// window's end, where its own time is written.
func TestDedupesWritesWithinTheWindow(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	nc, node := launched(f, t, "busy", true)
	reconcileNode(f, t, node.Name)
	first := lastPodEvent(f, t, nc)
	rv := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()).ResourceVersion

	f.clk.Step(4 * time.Second)
	res := reconcileNode(f, t, node.Name)
	if res.RequeueAfter != podevents.DedupeWindow-4*time.Second {
		t.Fatalf("RequeueAfter = %v, want %v", res.RequeueAfter, podevents.DedupeWindow-4*time.Second)
	}
	if got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()); got.ResourceVersion != rv || !got.Status.LastPodEventTime.Time.Equal(first) {
		t.Fatalf("NodeClaim written inside the dedupe window: lastPodEventTime %v", got.Status.LastPodEventTime)
	}

	f.clk.Step(6 * time.Second)
	if res := reconcileNode(f, t, node.Name); res.RequeueAfter != 0 {
		t.Fatalf("unexpected requeue %v", res.RequeueAfter)
	}
	if got := lastPodEvent(f, t, nc); !got.Equal(first.Add(4 * time.Second)) {
		t.Fatalf("lastPodEventTime %v, want the second event's %v", got, first.Add(4*time.Second))
	}
}

// TestRoundsUpToTheSecond: the API keeps seconds; the stored time is never
// earlier than the event.
func TestRoundsUpToTheSecond(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	nc, node := launched(f, t, "sub-second", true)
	f.clk.Step(300 * time.Millisecond)
	reconcileNode(f, t, node.Name)
	want := f.clk.Now().Truncate(time.Second).Add(time.Second)
	if got := lastPodEvent(f, t, nc); !got.Equal(want) {
		t.Fatalf("lastPodEventTime %v, want %v (rounded up from %v)", got, want, f.clk.Now())
	}
}

// TestIgnoresNodesWithoutNodeClaims: a node not launched by Karpenter, a
// deleted node, and a deleting NodeClaim are left alone.
func TestIgnoresNodesWithoutNodeClaims(t *testing.T) {
	f := setup(t)
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-123"}}
	ExpectApplied(f.ctx, t, e.Client, foreign)
	reconcileNode(f, t, "foreign")
	reconcileNode(f, t, "gone")

	nc, node := launched(f, t, "deleting", true)
	nc.Finalizers = []string{"example.com/hold"}
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectDeleted(f.ctx, t, e.Client, nc)
	reconcileNode(f, t, node.Name)
	if got := lastPodEvent(f, t, nc); !got.IsZero() {
		t.Fatalf("deleting NodeClaim stamped: %v", got)
	}
	ExpectFinalizersRemoved(f.ctx, t, e.Client, nc)
}

// TestUnderAManager: with the controller running in a manager, binding a pod
// through the scheduler's binding subresource, the pod finishing, and its
// deletion each reach the NodeClaim with no test code calling Reconcile.
func TestUnderAManager(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	nc, node := launched(f, t, "managed", false)
	runUnderManager(f, t)

	expectStamp := func(step string) {
		t.Helper()
		want := f.clk.Now()
		Eventually(t, 20*time.Second, func() error {
			if got := lastPodEvent(f, t, nc); !got.Equal(want) {
				return fmt.Errorf("after %s: lastPodEventTime %v, want %v", step, got, want)
			}
			return nil
		})
	}

	p := pod("web", "")
	ExpectApplied(f.ctx, t, e.Client, p)
	bind(f, t, p, node.Name)
	expectStamp("binding")

	f.clk.Step(podevents.DedupeWindow)
	p = ExpectExists(f.ctx, t, e.Client, p)
	p.Status.Phase = corev1.PodSucceeded
	ExpectStatusUpdated(f.ctx, t, e.Client, p)
	expectStamp("pod succeeded")

	f.clk.Step(podevents.DedupeWindow)
	ExpectDeleted(f.ctx, t, e.Client, p)
	expectStamp("pod deleted")

}

// TestHeldEventsWrittenWhenConsolidateAfterTurnsPositive: under a manager,
// a binding on a NodePool with consolidateAfter 0s is held, not written; the
// NodePool's change to 30s alone (no further pod event) writes it, with the
// binding's time.
func TestHeldEventsWrittenWhenConsolidateAfterTurnsPositive(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("0s"))
	nc, node := launched(f, t, "held", true)
	ctrl := runUnderManager(f, t)

	p := pod("web", "")
	ExpectApplied(f.ctx, t, e.Client, p)
	bind(f, t, p, node.Name)
	bound := f.clk.Now()
	Eventually(t, 20*time.Second, func() error {
		if got := ctrl.Held(node.Name); !got.Equal(bound) {
			return fmt.Errorf("held %v, want the binding's %v", got, bound)
		}
		return nil
	})
	if got := lastPodEvent(f, t, nc); !got.IsZero() {
		t.Fatalf("lastPodEventTime written with consolidateAfter 0s: %v", got)
	}

	f.clk.Step(time.Minute)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	Eventually(t, 20*time.Second, func() error {
		if got := lastPodEvent(f, t, nc); !got.Equal(bound) {
			return fmt.Errorf("lastPodEventTime %v, want the binding's %v", got, bound)
		}
		return nil
	})
}

// runUnderManager runs a podevents controller on f's clock in a manager until
// the test ends.
func runUnderManager(f *fixture, t *testing.T) *podevents.Controller {
	t.Helper()
	mgr := env.NewManager(t, e.Config, e.Scheme)
	ctrl := podevents.NewController(mgr.GetClient(), f.clk)
	if err := ctrl.Register(f.ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(f.ctx, t, mgr)
	return ctrl
}
