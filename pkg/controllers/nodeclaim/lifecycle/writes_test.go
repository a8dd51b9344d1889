package lifecycle_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// lagging is a client of the test's API server whose reads can be held
// behind: the informer cache a controller reads from in production delivers
// an object's events in order but some time after the writes, so a pass can
// read a copy older than the writes it or another pass just made. Writes go
// to the API server as usual, and are counted.
type lagging struct {
	client.Client
	mu sync.Mutex
	// claim, when set, is what Get returns for that NodeClaim.
	claim *v1.NodeClaim
	// nodes, when set, is what Node reads return.
	nodes []corev1.Node
	// statusWrites counts NodeClaim status writes (patches and applies).
	statusWrites int
	// metaPatches counts NodeClaim metadata patches; lastMetaPatch is the
	// last one's body.
	metaPatches   int
	lastMetaPatch []byte
	// nodePatches counts Node patches.
	nodePatches int
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
			switch o := obj.(type) {
			case *v1.NodeClaim:
				if l.claim != nil && l.claim.Name == key.Name {
					l.claim.DeepCopyInto(o)
					return nil
				}
			case *corev1.Node:
				for i := range l.nodes {
					if l.nodes[i].Name == key.Name {
						l.nodes[i].DeepCopyInto(o)
						return nil
					}
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if nodes, ok := list.(*corev1.NodeList); ok && l.nodes != nil {
				nodes.Items = nil
				for i := range l.nodes {
					nodes.Items = append(nodes.Items, *l.nodes[i].DeepCopy())
				}
				return nil
			}
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				l.mu.Lock()
				l.nodePatches++
				l.mu.Unlock()
			}
			if _, ok := obj.(*v1.NodeClaim); ok {
				body, err := patch.Data(obj)
				if err != nil {
					return err
				}
				l.mu.Lock()
				l.metaPatches++
				l.lastMetaPatch = body
				l.mu.Unlock()
			}
			return c.Patch(ctx, obj, patch, opts...)
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

func (l *lagging) writes() (status, meta int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusWrites, l.metaPatches
}

// TestReadyNodeRegistersAndInitializesInOneWrite: when the Node is Ready by
// the time it registers, the pass that registers it also initializes the
// NodeClaim, in one status write and one Node patch. Initialization must judge the Node as
// Registration's own patch left it: the cache still shows the unregistered
// taint Registration just lifted, and judged from it the NodeClaim was
// written once as Registered but not Initialized (KnownEphemeralTaintsExist)
// and once more by the next pass.
func TestReadyNodeRegistersAndInitializesInOneWrite(t *testing.T) {
	f := setup(t)
	l := newLagging(t)
	ctrl := lifecycle.NewController(l, f.cp, f.clk, f.recorder)
	ExpectApplied(f.ctx, t, e.Client, nodeClass("delayed", time.Second, true))
	nc := nodeClaim("claim-one-write", "delayed")
	nc.Spec.StartupTaints = nil
	ExpectApplied(f.ctx, t, e.Client, nc)

	ExpectReconciled(f.ctx, t, ctrl, nc) // launched; the node comes a second later
	f.clk.Step(time.Second)
	var node *corev1.Node
	Eventually(t, 10*time.Second, func() error {
		node = &corev1.Node{}
		return e.Client.Get(f.ctx, client.ObjectKey{Name: nc.Name}, node)
	})
	node = makeReady(f, t, node)
	if !hasTaintKey(node, v1.UnregisteredTaintKey) {
		t.Fatalf("the KWOK node comes with the unregistered taint: %v", node.Spec.Taints)
	}
	// The cache holds the Node as it joined; it will not see Registration's
	// patch within this pass.
	l.mu.Lock()
	l.nodes = []corev1.Node{*node}
	l.mu.Unlock()

	before, _ := l.writes()
	l.mu.Lock()
	nodePatchesBefore := l.nodePatches
	l.mu.Unlock()
	ExpectReconciled(f.ctx, t, ctrl, nc)
	after, _ := l.writes()
	l.mu.Lock()
	nodePatches := l.nodePatches - nodePatchesBefore
	l.mu.Unlock()
	if nodePatches != 1 {
		t.Errorf("%d Node patches to register and initialize, want 1 (labels, taints, owner and the initialized label at once)", nodePatches)
	}
	got := ExpectExists(f.ctx, t, e.Client, nc)
	if !condition(got, v1.ConditionTypeRegistered).IsTrue() || !condition(got, v1.ConditionTypeInitialized).IsTrue() || !got.StatusConditions().Root().IsTrue() {
		t.Fatalf("want Registered, Initialized and Ready after the pass that registered a Ready node: %v", got.Status.Conditions)
	}
	if after-before != 1 {
		t.Fatalf("registering and initializing took %d status writes, want 1", after-before)
	}
	if n := ExpectExists(f.ctx, t, e.Client, node); n.Labels[v1.NodeInitializedLabelKey] != "true" || hasTaintKey(n, v1.UnregisteredTaintKey) {
		t.Fatalf("node not registered and initialized: labels %v taints %v", n.Labels, n.Spec.Taints)
	}
}

// TestStaleReadAfterOwnWriteWritesNothing: a pass that reads the NodeClaim
// from before lifecycle's own last status write (its metadata patch's event
// came first) must neither write again nor move a condition's
// lastTransitionTime: lifecycle alone writes its conditions, so what it last
// applied stands until the cache catches up.
func TestStaleReadAfterOwnWriteWritesNothing(t *testing.T) {
	f := setup(t)
	l := newLagging(t)
	ctrl := lifecycle.NewController(l, f.cp, f.clk, f.recorder)
	nc := nodeClaim("claim-stale", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc) // launch and register; the node is not Ready
	written := ExpectExists(f.ctx, t, e.Client, nc)
	launched := *condition(written, v1.ConditionTypeLaunched)
	if !launched.IsTrue() || !condition(written, v1.ConditionTypeRegistered).IsTrue() {
		t.Fatalf("first pass: %v", written.Status.Conditions)
	}

	// The cache shows the NodeClaim with lifecycle's metadata patch (labels)
	// but without its status apply.
	stale := written.DeepCopy()
	stale.Status = v1.NodeClaimStatus{}
	l.mu.Lock()
	l.claim = stale
	l.mu.Unlock()
	f.clk.Step(5 * time.Second)

	before, metaBefore := l.writes()
	ExpectReconciled(f.ctx, t, ctrl, nc)
	after, metaAfter := l.writes()
	if after != before || metaAfter != metaBefore {
		t.Fatalf("a pass from a stale read wrote %d status and %d metadata requests, want none", after-before, metaAfter-metaBefore)
	}
	got := ExpectExists(f.ctx, t, e.Client, nc)
	if c := condition(got, v1.ConditionTypeLaunched); !c.LastTransitionTime.Equal(&launched.LastTransitionTime) {
		t.Fatalf("Launched moved from %v to %v", launched.LastTransitionTime, c.LastTransitionTime)
	}
	if got.Status.ProviderID != written.Status.ProviderID || !got.Status.Capacity.Cpu().Equal(*written.Status.Capacity.Cpu()) {
		t.Fatalf("status fields changed: %+v", got.Status)
	}
}

// TestLaunchMetadataPatchCarriesNoStatus: the patch that stores the labels
// launch resolved (instance type, zone, ...) carries metadata only; the
// status goes by lifecycle's apply.
func TestLaunchMetadataPatchCarriesNoStatus(t *testing.T) {
	f := setup(t)
	l := newLagging(t)
	ctrl := lifecycle.NewController(l, f.cp, f.clk, f.recorder)
	nc := nodeClaim("claim-meta", "default")
	nc.Finalizers = []string{v1.TerminationFinalizer} // as the provisioner creates it
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	_, meta := l.writes()
	if meta != 1 {
		t.Fatalf("%d metadata patches, want 1 (the launched labels)", meta)
	}
	if got := string(l.lastMetaPatch); !containsAll(got, `"metadata"`, corev1.LabelInstanceTypeStable) || containsAll(got, `"status"`) {
		t.Fatalf("metadata patch %s", got)
	}
	if got := ExpectExists(f.ctx, t, e.Client, nc); got.Labels[corev1.LabelInstanceTypeStable] == "" || got.Status.ProviderID == "" {
		t.Fatalf("labels %v providerID %q", got.Labels, got.Status.ProviderID)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
