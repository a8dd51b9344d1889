package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/lagging"
)

// TestReadyNodeRegistersAndInitializesInOneWrite: when the Node is Ready by
// the time it registers, the pass that registers it also initializes the
// NodeClaim, in one status write and one Node patch. Initialization must judge the Node as
// Registration's own patch left it: the cache still shows the unregistered
// taint Registration just lifted, and judged from it the NodeClaim was
// written once as Registered but not Initialized (KnownEphemeralTaintsExist)
// and once more by the next pass.
func TestReadyNodeRegistersAndInitializesInOneWrite(t *testing.T) {
	f := setup(t)
	l := lagging.New(t, e.Config, e.Scheme)
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
	l.HoldNodes(*node)

	before := l.StatusWrites()
	nodePatchesBefore := l.NodePatches()
	ExpectReconciled(f.ctx, t, ctrl, nc)
	after := l.StatusWrites()
	nodePatches := l.NodePatches() - nodePatchesBefore
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
	l := lagging.New(t, e.Config, e.Scheme)
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
	l.HoldClaim(stale)
	f.clk.Step(5 * time.Second)

	before, metaBefore := writes(l)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	after, metaAfter := writes(l)
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
	l := lagging.New(t, e.Config, e.Scheme)
	ctrl := lifecycle.NewController(l, f.cp, f.clk, f.recorder)
	nc := nodeClaim("claim-meta", "default")
	nc.Finalizers = []string{v1.TerminationFinalizer} // as the provisioner creates it
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	_, meta := writes(l)
	_, lastMetaPatch := l.MetaPatches()
	if meta != 1 {
		t.Fatalf("%d metadata patches, want 1 (the launched labels)", meta)
	}
	if got := string(lastMetaPatch); !containsAll(got, `"metadata"`, corev1.LabelInstanceTypeStable) || containsAll(got, `"status"`) {
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

// writes is l's NodeClaim status writes and metadata patches.
func writes(l *lagging.Client) (status, meta int) {
	meta, _ = l.MetaPatches()
	return l.StatusWrites(), meta
}
