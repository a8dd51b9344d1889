package candidacy_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// lagging is a client of the test's API server whose NodeClaim reads can be
// held behind, as an informer cache's are behind the writes, and which counts
// NodeClaim status writes.
type lagging struct {
	client.Client
	mu           sync.Mutex
	claim        *v1.NodeClaim
	statusWrites int
}

func newLagging(t *testing.T) *lagging {
	t.Helper()
	direct, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	l := &lagging{}
	l.Client = interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if nc, ok := obj.(*v1.NodeClaim); ok && l.claim != nil && l.claim.Name == key.Name {
				l.claim.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok && sub == "status" {
				l.mu.Lock()
				l.statusWrites++
				l.mu.Unlock()
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return l
}

func (l *lagging) writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusWrites
}

// TestStaleReadAfterOwnApplyWritesNothing: a pass that reads the NodeClaim
// from before this controller's own last apply (another controller's write,
// committed just before it, arrived first) computes the same conditions and
// writes nothing; Consolidatable keeps its lastTransitionTime.
func TestStaleReadAfterOwnApplyWritesNothing(t *testing.T) {
	f := setup(t)
	l := newLagging(t)
	ctrl := candidacy.NewController(l, f.cloud, f.clk)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-stale", true)

	ExpectReconciled(f.ctx, t, ctrl, nc)
	written := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	first := cond(written, v1.ConditionTypeConsolidatable)
	if !first.IsFalse() || first.Reason != candidacy.ReasonConsolidateAfterNotElapsed || l.writes() != 1 {
		t.Fatalf("first pass: Consolidatable %+v after %d writes", first, l.writes())
	}

	stale := written.DeepCopy()
	stale.Status.Conditions = slices.DeleteFunc(stale.Status.Conditions, func(c status.Condition) bool { return c.Type == v1.ConditionTypeConsolidatable })
	l.mu.Lock()
	l.claim = stale
	l.mu.Unlock()
	f.clk.Step(2 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	if n := l.writes(); n != 1 {
		t.Fatalf("a pass from a stale read wrote %d times, want none", n-1)
	}
	if c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeConsolidatable); !c.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Fatalf("Consolidatable moved from %v to %v", first.LastTransitionTime, c.LastTransitionTime)
	}

	// Once the consolidateAfter has passed it is written, from the same read.
	f.clk.Step(28 * time.Second)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	if c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeConsolidatable); !c.IsTrue() || l.writes() != 2 {
		t.Fatalf("at consolidateAfter: Consolidatable %+v after %d writes", c, l.writes())
	}
}
