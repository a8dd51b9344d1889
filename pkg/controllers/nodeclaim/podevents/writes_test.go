package podevents_test

import (
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/lagging"
)

// TestHoldsEventsWhoseTimeCannotMatter: with consolidateAfter Never or 0s
// the time of a pod event changes no decision, so nothing is written (at a
// fleet's scale-down that was one status write per node per 10 s); the last
// event is held, and written, with its own time, once the NodePool's
// consolidateAfter becomes positive.
func TestHoldsEventsWhoseTimeCannotMatter(t *testing.T) {
	for _, after := range []string{v1.Never, "0s"} {
		t.Run(after, func(t *testing.T) {
			f := setup(t)
			ExpectApplied(f.ctx, t, e.Client, nodePool(after))
			nc, node := launched(f, t, "busy-"+map[string]string{v1.Never: "never", "0s": "zero"}[after], true)
			rv := nc.ResourceVersion
			f.ctrl.Saw(node.Name)
			reconcileNode(f, t, node.Name)
			f.clk.Step(podevents.DedupeWindow + 4*time.Second)
			last := f.clk.Now()
			f.ctrl.Saw(node.Name)
			if res := reconcileNode(f, t, node.Name); res.RequeueAfter != 0 {
				t.Fatalf("RequeueAfter = %v, want none", res.RequeueAfter)
			}
			if got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()); got.ResourceVersion != rv {
				t.Fatalf("NodeClaim written with consolidateAfter %s: lastPodEventTime %v", after, got.Status.LastPodEventTime)
			}
			if got := f.ctrl.Held(node.Name); !got.Equal(last) {
				t.Fatalf("held %v, want the last event's %v", got, last)
			}

			f.clk.Step(time.Minute)
			ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
			reconcileNode(f, t, node.Name)
			if got := lastPodEvent(f, t, nc); !got.Equal(last) {
				t.Fatalf("lastPodEventTime %v, want the held event's %v (not the reconcile's %v)", got, last, f.clk.Now())
			}
			if got := f.ctrl.Held(node.Name); !got.IsZero() {
				t.Fatalf("event still held after it was written: %v", got)
			}
		})
	}
}

// TestStaleReadInsideTheWindowWritesNothing: the NodeClaim read from a cache
// that has not seen the controller's own last write yet still counts that
// write: a second event a second later is deduped, not written again.
func TestStaleReadInsideTheWindowWritesNothing(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool("30s"))
	nc, node := launched(f, t, "stale", true)
	l := lagging.New(t, e.Config, e.Scheme)
	f.ctrl = podevents.NewController(l, f.clk)

	l.HoldClaim(nc) // as read before any write: no lastPodEventTime
	reconcileNode(f, t, node.Name)
	first := lastPodEvent(f, t, nc)
	f.clk.Step(time.Second)
	reconcileNode(f, t, node.Name)
	if n := l.StatusWrites(); n != 1 {
		t.Fatalf("%d writes within a second, want 1", n)
	}
	if got := lastPodEvent(f, t, nc); !got.Equal(first) {
		t.Fatalf("lastPodEventTime moved from %v to %v", first, got)
	}
}
