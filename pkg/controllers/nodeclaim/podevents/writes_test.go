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

// TestDropsEventsInsideTheWindowWhenTheirTimeCannotMatter: with
// consolidateAfter Never or 0s, which event of a window is recorded changes
// no decision, so an event inside the window is dropped as upstream drops it:
// no requeue and no second write.
func TestDropsEventsInsideTheWindowWhenTheirTimeCannotMatter(t *testing.T) {
	for _, after := range []string{v1.Never, "0s"} {
		t.Run(after, func(t *testing.T) {
			f := setup(t)
			ExpectApplied(f.ctx, t, e.Client, nodePool(after))
			nc, node := launched(f, t, "busy-"+map[string]string{v1.Never: "never", "0s": "zero"}[after], true)
			reconcileNode(f, t, node.Name)
			first := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())

			f.clk.Step(4 * time.Second)
			if res := reconcileNode(f, t, node.Name); res.RequeueAfter != 0 {
				t.Fatalf("RequeueAfter = %v, want none", res.RequeueAfter)
			}
			if got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()); got.ResourceVersion != first.ResourceVersion {
				t.Fatalf("NodeClaim written inside the dedupe window: lastPodEventTime %v", got.Status.LastPodEventTime)
			}
			// After the window the next event is written.
			f.clk.Step(podevents.DedupeWindow)
			reconcileNode(f, t, node.Name)
			if got := lastPodEvent(f, t, nc); !got.Equal(f.clk.Now()) {
				t.Fatalf("lastPodEventTime %v, want %v", got, f.clk.Now())
			}
		})
	}
}

// TestStaleReadInsideTheWindowWritesNothing: the NodeClaim read from a cache
// that has not seen the controller's own last write yet still counts that
// write: a second event a second later is deduped, not written again.
func TestStaleReadInsideTheWindowWritesNothing(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodePool(v1.Never))
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
