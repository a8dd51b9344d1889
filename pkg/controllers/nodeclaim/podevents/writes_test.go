package podevents_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
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
	var mu sync.Mutex
	var stale *v1.NodeClaim
	writes := 0
	direct, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	lagging := interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			defer mu.Unlock()
			if o, ok := obj.(*v1.NodeClaim); ok && stale != nil && key.Name == stale.Name {
				stale.DeepCopyInto(o)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			mu.Lock()
			writes++
			mu.Unlock()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	f.ctrl = podevents.NewController(lagging, f.clk)

	mu.Lock()
	stale = nc.DeepCopy() // as read before any write: no lastPodEventTime
	mu.Unlock()
	reconcileNode(f, t, node.Name)
	first := lastPodEvent(f, t, nc)
	f.clk.Step(time.Second)
	reconcileNode(f, t, node.Name)
	if writes != 1 {
		t.Fatalf("%d writes within a second, want 1", writes)
	}
	if got := lastPodEvent(f, t, nc); !got.Equal(first) {
		t.Fatalf("lastPodEventTime moved from %v to %v", first, got)
	}
}
