package termination_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
	"github.com/karpenter-go/karpenter/pkg/test/lagging"
)

// TestDrainWritesTheNodeClaimOncePerState: a drain whose message changes with
// every pod evicted and gone writes the NodeClaim when Drained turns Unknown,
// not again for each message within termination.MessageRefresh, and once for
// Drained, VolumesDetached and InstanceTerminating together at the end (it
// wrote about twenty times for a node of ten pods). The last message is still
// written once MessageRefresh has passed.
func TestDrainWritesTheNodeClaimOncePerState(t *testing.T) {
	f := setup(t)
	l := lagging.New(t, e.Config, e.Scheme)
	f.ctrl = termination.NewController(l, f.cp, f.clk, f.recorder)
	count := l.StatusWrites

	nc, node := f.launch(t, "writes", 0)
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c", "d"} {
		pods = append(pods, f.pod(t, "web-"+name, node, fixtures.WithTerminationGracePeriodSeconds(30)))
	}
	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node) // evictions requested
	if n := count(); n != 1 {
		t.Fatalf("%d NodeClaim status writes when the drain began, want 1 (Drained Unknown)", n)
	}
	first := condition(f.ctx, t, nc, v1.ConditionTypeDrained).Message
	f.pass(t, node) // the pods are terminating: a new message
	if err := e.Client.Delete(f.ctx, pods[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.pass(t, node) // one pod fewer: another
	if n := count(); n != 1 {
		t.Fatalf("%d NodeClaim status writes within %s of the first, want 1: only the message changed", n, termination.MessageRefresh)
	}
	if got := condition(f.ctx, t, nc, v1.ConditionTypeDrained).Message; got != first {
		t.Fatalf("message rewritten inside the refresh window: %q", got)
	}
	// Pods that come back (not terminating) keep the node draining; after
	// MessageRefresh the current message is written.
	f.pod(t, "web-e", node, fixtures.WithTerminationGracePeriodSeconds(30))
	f.clk.Step(termination.MessageRefresh)
	f.pass(t, node)
	if n := count(); n != 2 {
		t.Fatalf("%d NodeClaim status writes after %s, want 2", n, termination.MessageRefresh)
	}
	if got := condition(f.ctx, t, nc, v1.ConditionTypeDrained).Message; got == first || !strings.Contains(got, "web-e") {
		t.Fatalf("message after the refresh window: %q, want the current one naming web-e", got)
	}
	f.pass(t, node)
	f.kubelet(t)
	f.clk.Step(time.Second)
	f.pass(t, node) // drained: one write for the three conditions, then the node goes
	ExpectNotFound(f.ctx, t, e.Client, node)
	if n := count(); n != 3 {
		t.Fatalf("%d NodeClaim status writes in all, want 3", n)
	}
	for _, typ := range []string{v1.ConditionTypeDrained, v1.ConditionTypeVolumesDetached, v1.ConditionTypeInstanceTerminating} {
		if c := condition(f.ctx, t, nc, typ); !c.IsTrue() {
			t.Fatalf("%s: %+v", typ, c)
		}
	}
}

// TestStaleReadKeepsTerminationsOwnConditions: a pass that reads the
// NodeClaim from before termination's own last write (an informer cache
// behind it, most reads at thousands of nodes) neither writes again nor, when
// it does write, removes what that write set: the conditions are applied
// without an optimistic lock (no 409 and retry) from what termination
// remembers of its own write.
func TestStaleReadKeepsTerminationsOwnConditions(t *testing.T) {
	f := setup(t)
	l := lagging.New(t, e.Config, e.Scheme)
	f.ctrl = termination.NewController(l, f.cp, f.clk, f.recorder)

	nc, node := f.launch(t, "stale", 0)
	p := f.pod(t, "web", node, fixtures.WithTerminationGracePeriodSeconds(30))
	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node) // Drained Unknown, the eviction requested
	f.pass(t, node)
	written := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	if c := written.StatusConditions().Get(v1.ConditionTypeDrained); c == nil || !c.IsUnknown() {
		t.Fatalf("Drained after the drain began: %+v", c)
	}
	stale := written.DeepCopy()
	stale.Status.Conditions = slices.DeleteFunc(stale.Status.Conditions, func(c status.Condition) bool { return c.Type == v1.ConditionTypeDrained })
	l.HoldClaim(stale)
	before := l.StatusWrites()
	f.pass(t, node)
	if n := l.StatusWrites() - before; n != 0 {
		t.Fatalf("%d status writes from a stale read of an unchanged drain, want 0", n)
	}

	// The pod goes: the pass applies Drained True and the rest, and the
	// stale copy it read costs nothing.
	if err := e.Client.Delete(f.ctx, p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.pass(t, node)
	if n := l.StatusWrites() - before; n != 1 {
		t.Fatalf("%d status writes to finish the drain from a stale read, want 1", n)
	}
	l.HoldClaim(nil)
	for _, typ := range []string{v1.ConditionTypeDrained, v1.ConditionTypeVolumesDetached, v1.ConditionTypeInstanceTerminating} {
		if c := condition(f.ctx, t, nc, typ); !c.IsTrue() {
			t.Fatalf("%s: %+v", typ, c)
		}
	}
}
