package candidacy_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestConsolidatableFlipsExactlyAtConsolidateAfter: counted from
// initialization when no pod event was seen; False one second before, True at
// the instant, and the controller asks to come back exactly then.
func TestConsolidatableFlipsExactlyAtConsolidateAfter(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)

	requeue, nc := f.reconcile(t, nc)
	c := cond(nc, v1.ConditionTypeConsolidatable)
	if !c.IsFalse() || c.Reason != candidacy.ReasonConsolidateAfterNotElapsed {
		t.Fatalf("Consolidatable = %+v, want False/%s", c, candidacy.ReasonConsolidateAfterNotElapsed)
	}
	if !strings.Contains(c.Message, "30s") || !strings.Contains(c.Message, "initialized") {
		t.Errorf("message %q should name consolidateAfter and what it counts from", c.Message)
	}
	if requeue != 30*time.Second {
		t.Fatalf("RequeueAfter = %v, want exactly 30s", requeue)
	}

	f.clk.Step(29 * time.Second)
	requeue, nc = f.reconcile(t, nc)
	if c := cond(nc, v1.ConditionTypeConsolidatable); !c.IsFalse() {
		t.Fatalf("Consolidatable at 29s = %+v, want False", c)
	}
	if requeue != time.Second {
		t.Fatalf("RequeueAfter at 29s = %v, want 1s", requeue)
	}

	f.clk.Step(time.Second)
	_, nc = f.reconcile(t, nc)
	c = cond(nc, v1.ConditionTypeConsolidatable)
	if !c.IsTrue() {
		t.Fatalf("Consolidatable at 30s = %+v, want True", c)
	}
	if !c.LastTransitionTime.Time.Equal(f.clk.Now()) {
		t.Errorf("LastTransitionTime %v, want %v", c.LastTransitionTime, f.clk.Now())
	}
}

// TestPodEventResetsConsolidatable: a pod event (written by the podevents
// controller) turns a consolidatable node back to False, and consolidateAfter
// counts again from that event.
func TestPodEventResetsConsolidatable(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "1m")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	node := nodeFor(f, t, nc)

	f.clk.Step(5 * time.Minute)
	_, nc = f.reconcile(t, nc)
	if c := cond(nc, v1.ConditionTypeConsolidatable); !c.IsTrue() {
		t.Fatalf("Consolidatable = %+v, want True", c)
	}

	ExpectReconciled(f.ctx, t, podevents.NewController(e.Client, f.clk), node)
	event := f.clk.Now()
	requeue, nc := f.reconcile(t, nc)
	c := cond(nc, v1.ConditionTypeConsolidatable)
	if !c.IsFalse() || !strings.Contains(c.Message, "last pod event") {
		t.Fatalf("after a pod event Consolidatable = %+v, want False counting from the last pod event", c)
	}
	if requeue != time.Minute {
		t.Fatalf("RequeueAfter = %v, want 1m", requeue)
	}

	f.clk.SetTime(event.Add(time.Minute - time.Second))
	if _, nc = f.reconcile(t, nc); !cond(nc, v1.ConditionTypeConsolidatable).IsFalse() {
		t.Fatal("consolidatable before consolidateAfter elapsed since the pod event")
	}
	f.clk.SetTime(event.Add(time.Minute))
	if _, nc = f.reconcile(t, nc); !cond(nc, v1.ConditionTypeConsolidatable).IsTrue() {
		t.Fatal("not consolidatable once consolidateAfter elapsed since the pod event")
	}
}

// TestConsolidateAfterNever: never consolidatable, with a reason saying so,
// and nothing to wake up for.
func TestConsolidateAfterNever(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "Never")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	f.clk.Step(1000 * time.Hour)
	requeue, nc := f.reconcile(t, nc)
	c := cond(nc, v1.ConditionTypeConsolidatable)
	if !c.IsFalse() || c.Reason != candidacy.ReasonConsolidationDisabled || !strings.Contains(c.Message, "Never") {
		t.Fatalf("Consolidatable = %+v, want False/%s", c, candidacy.ReasonConsolidationDisabled)
	}
	// Only drift's periodic re-check remains.
	if requeue != candidacy.DriftRecheckInterval {
		t.Fatalf("RequeueAfter = %v, want the drift re-check %v", requeue, candidacy.DriftRecheckInterval)
	}

	// Turning consolidation on makes the (long idle) node consolidatable.
	update(f, t, np, func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("10m") })
	if _, nc = f.reconcile(t, nc); !cond(nc, v1.ConditionTypeConsolidatable).IsTrue() {
		t.Fatal("not consolidatable after consolidateAfter changed from Never to 10m on a node idle for 1000h")
	}
}

// TestNotInitializedIsNotConsolidatable: no condition before the node is
// initialized, however long ago the last pod event was; a condition set
// earlier is removed.
func TestNotInitializedIsNotConsolidatable(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "0s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", false)
	nc.Status.LastPodEventTime = metav1.NewTime(f.clk.Now().Add(-time.Hour))
	nc.StatusConditions().Set(statusTrue(v1.ConditionTypeConsolidatable, f.clk.Now()))
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	_, nc = f.reconcile(t, nc)
	if c := cond(nc, v1.ConditionTypeConsolidatable); c != nil {
		t.Fatalf("Consolidatable = %+v on an uninitialized NodeClaim, want none", c)
	}
}

// TestConsolidateAfterZero: consolidatable as soon as it is initialized.
func TestConsolidateAfterZero(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "0s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	if _, nc = f.reconcile(t, nc); !cond(nc, v1.ConditionTypeConsolidatable).IsTrue() {
		t.Fatal("consolidateAfter 0s: not consolidatable right after initialization")
	}
}

// TestConsolidateAfterZeroIgnoresPodEventTime: with 0s a pod event does not
// turn the node unconsolidatable, not even for the fraction of a second its
// recorded time (rounded up to the second) lies ahead of the clock, so the
// condition is not written False and True again on every pod event.
func TestConsolidateAfterZeroIgnoresPodEventTime(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "0s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	_, nc = f.reconcile(t, nc)
	first := *cond(nc, v1.ConditionTypeConsolidatable)
	if !first.IsTrue() {
		t.Fatalf("Consolidatable = %+v, want True", first)
	}
	f.clk.Step(2*time.Second + 300*time.Millisecond)
	nc.Status.LastPodEventTime = metav1.NewTime(f.clk.Now().Truncate(time.Second).Add(time.Second))
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	requeue, nc := f.reconcile(t, nc)
	if c := cond(nc, v1.ConditionTypeConsolidatable); !c.IsTrue() || !c.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Fatalf("after a pod event stamped %v at %v: Consolidatable = %+v, want True since %v", nc.Status.LastPodEventTime, f.clk.Now(), c, first.LastTransitionTime)
	}
	if requeue != candidacy.DriftRecheckInterval {
		t.Fatalf("RequeueAfter = %v, want only the drift re-check", requeue)
	}
}
