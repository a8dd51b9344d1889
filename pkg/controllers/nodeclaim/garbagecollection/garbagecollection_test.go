package garbagecollection_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/garbagecollection"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestOrphanInstanceIsCollectedOnlyAfterGracePeriod(t *testing.T) {
	ctx, clk := setup(t, 0)
	p := start(t, clk)
	nc := nodeClaim("orphan")
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, p.lc, nc) // launched and registered: the Node holds our finalizer
	// The NodeClaim disappears without its finalizer running (e.g. removed by hand).
	ExpectFinalizersRemoved(ctx, t, e.Client, nc)
	ExpectDeleted(ctx, t, e.Client, nc)
	ExpectNotFound(ctx, t, e.Client, nc)

	res, err := p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedInstances) != 0 || len(nodes(ctx, t)) != 1 {
		t.Fatalf("an instance younger than the grace period was collected: %+v", res)
	}
	// An instance's age counts from its Node's creation, stamped by the API server in real
	// time, after the fake clock started: a minute past the grace period, not a second,
	// however long the machine took to get there.
	clk.Step(garbagecollection.DefaultInstanceGracePeriod + time.Minute)
	res, err = p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedInstances) != 1 || res.DeletedInstances[0] != "kwok://orphan" {
		t.Fatalf("orphan not collected: %+v", res)
	}
	ExpectNotFound(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}})
}

func TestInstancesWithNodeClaimsAreKept(t *testing.T) {
	ctx, clk := setup(t, 0)
	p := start(t, clk)
	for i := range 3 {
		nc := nodeClaim(fmt.Sprintf("kept-%d", i))
		ExpectApplied(ctx, t, e.Client, nc)
		ExpectReconciled(ctx, t, p.lc, nc)
	}
	clk.Step(time.Hour)
	res, err := p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedInstances)+len(res.DeletedNodeClaims) != 0 || len(nodes(ctx, t)) != 3 || len(claims(ctx, t)) != 3 {
		t.Fatalf("healthy instances or claims collected: %+v", res)
	}
}

func TestNodeClaimWhoseInstanceVanishedIsDeleted(t *testing.T) {
	ctx, clk := setup(t, 0)
	p := start(t, clk)
	nc := nodeClaim("vanished")
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, p.lc, nc)
	// The instance dies behind Karpenter's back (the Node object is force-removed).
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vanished"}}
	ExpectFinalizersRemoved(ctx, t, e.Client, node)
	ExpectDeleted(ctx, t, e.Client, node)
	ExpectNotFound(ctx, t, e.Client, node)

	// A launch younger than the grace period is not judged yet, but the
	// next pass is due when it comes of age (not a whole interval later).
	res, err := p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedNodeClaims) != 0 {
		t.Fatalf("a fresh launch was collected: %+v", res)
	}
	if res.RecheckAfter <= 0 || res.RecheckAfter > garbagecollection.DefaultLaunchGracePeriod {
		t.Fatalf("RecheckAfter = %s, want within the launch grace period %s", res.RecheckAfter, garbagecollection.DefaultLaunchGracePeriod)
	}
	clk.Step(res.RecheckAfter - time.Second)
	if res, err = p.gc.Reconcile(ctx); err != nil || len(res.DeletedNodeClaims) != 0 {
		t.Fatalf("collected a second before its grace period ended: %+v, %v", res, err)
	}
	clk.Step(time.Second)
	res, err = p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedNodeClaims) != 1 || res.DeletedNodeClaims[0] != "vanished" {
		t.Fatalf("NodeClaim with a vanished instance not deleted: %+v", res)
	}
	ExpectReconciled(ctx, t, p.lc, nc) // finalize
	ExpectNotFound(ctx, t, e.Client, nc)
}

func TestPendingLaunchIsNotMistakenForVanished(t *testing.T) {
	ctx, clk := setup(t, 10*time.Minute)
	p := start(t, clk)
	nc := nodeClaim("pending")
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, p.lc, nc)
	if !ExpectExists(ctx, t, e.Client, nc).StatusConditions().Get(v1.ConditionTypeLaunched).IsTrue() {
		t.Fatal("not launched")
	}
	// Past the grace period, but still within the registration delay: the
	// provider's Get knows the pending instance.
	clk.Step(garbagecollection.DefaultInstanceGracePeriod + time.Minute) // see the orphan test
	res, err := p.gc.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedNodeClaims)+len(res.DeletedInstances) != 0 {
		t.Fatalf("a launch waiting for its node was collected: %+v", res)
	}
}

// A controller killed at any point of a launch and restarted leaks no node
// and launches no duplicate. Each case stops the first process at one crash
// window, starts a fresh one (empty memory, same API server) and drives it,
// with garbage collection, to a settled state.
func TestCrashMidLaunchLeaksNothingAndLaunchesNoDuplicate(t *testing.T) {
	t.Run("after the Node was written, before the launch was recorded", func(t *testing.T) {
		ctx, clk := setup(t, 0)
		first := start(t, clk)
		nc := nodeClaim("crash-a")
		ExpectApplied(ctx, t, e.Client, nc)
		if _, err := first.cp.Create(ctx, nc); err != nil { // the Create call ...
			t.Fatal(err)
		}
		first.kill() // ... returned, and the process died before writing status.

		second := start(t, clk)
		ExpectReconciled(ctx, t, second.lc, nc)
		nc = ExpectExists(ctx, t, e.Client, nc)
		if !nc.StatusConditions().Get(v1.ConditionTypeRegistered).IsTrue() {
			t.Fatalf("restarted controller did not adopt the existing instance: %v", nc.Status.Conditions)
		}
		expectOneNodeFor(ctx, t, nc)
		settleAndExpectConsistent(ctx, t, clk, second)
	})

	t.Run("during the registration delay, before the launch was recorded", func(t *testing.T) {
		ctx, clk := setup(t, 30*time.Second)
		first := start(t, clk)
		nc := nodeClaim("crash-b")
		ExpectApplied(ctx, t, e.Client, nc)
		if _, err := first.cp.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		awaitTimer(t, clk, 1)
		first.kill()
		Eventually(t, 10*time.Second, func() error { // the dead process's timer is gone
			if clk.Waiters() != 0 {
				return errors.New("first process still waiting")
			}
			return nil
		})

		second := start(t, clk)
		ExpectReconciled(ctx, t, second.lc, nc)
		awaitTimer(t, clk, 1)
		clk.Step(30 * time.Second)
		Eventually(t, 10*time.Second, func() error {
			if len(nodes(ctx, t)) != 1 {
				return errors.New("node not written yet")
			}
			return nil
		})
		ExpectReconciled(ctx, t, second.lc, nc)
		expectOneNodeFor(ctx, t, ExpectExists(ctx, t, e.Client, nc))
		settleAndExpectConsistent(ctx, t, clk, second)
	})

	t.Run("during the registration delay, after the launch was recorded", func(t *testing.T) {
		ctx, clk := setup(t, 30*time.Second)
		first := start(t, clk)
		nc := nodeClaim("crash-c")
		ExpectApplied(ctx, t, e.Client, nc)
		ExpectReconciled(ctx, t, first.lc, nc)
		awaitTimer(t, clk, 1)
		first.kill()

		// The new process knows the claim as launched, but its instance died
		// with the old process: garbage collection deletes the claim so that
		// the provisioner replaces it, and nothing is left behind.
		second := start(t, clk)
		clk.Step(garbagecollection.DefaultInstanceGracePeriod)
		res, err := second.gc.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.DeletedNodeClaims) != 1 {
			t.Fatalf("expected the claim of the lost launch to be collected: %+v", res)
		}
		ExpectReconciled(ctx, t, second.lc, nc)
		ExpectNotFound(ctx, t, e.Client, nc)
		clk.Step(time.Hour)
		settleAndExpectConsistent(ctx, t, clk, second)
		if n := len(nodes(ctx, t)); n != 0 {
			t.Fatalf("%d nodes leaked", n)
		}
	})

	t.Run("NodeClaim deleted while its launch was unrecorded", func(t *testing.T) {
		ctx, clk := setup(t, 0)
		first := start(t, clk)
		nc := nodeClaim("crash-d")
		ExpectApplied(ctx, t, e.Client, nc)
		ExpectReconciled(ctx, t, first.lc, nc) // finalizer on, launched, registered
		// Roll the claim back to "launch not recorded", as if the process had
		// died between Create and the status write ...
		nc = ExpectExists(ctx, t, e.Client, nc)
		nc.Status = v1.NodeClaimStatus{}
		ExpectStatusUpdated(ctx, t, e.Client, nc)
		first.kill()
		// ... and the claim is deleted before the restart. Finalize cannot
		// know the instance (no provider ID), so the instance is orphaned.
		second := start(t, clk)
		ExpectDeleted(ctx, t, e.Client, nc)
		ExpectReconciled(ctx, t, second.lc, nc)
		ExpectNotFound(ctx, t, e.Client, nc)
		if len(nodes(ctx, t)) != 1 {
			t.Fatal("expected the orphan to still exist before garbage collection")
		}
		clk.Step(garbagecollection.DefaultInstanceGracePeriod + time.Minute) // see the orphan test
		if _, err := second.gc.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(nodes(ctx, t)); n != 0 {
			t.Fatalf("%d nodes leaked", n)
		}
	})
}

func expectOneNodeFor(ctx context.Context, t *testing.T, nc *v1.NodeClaim) {
	t.Helper()
	ns := nodes(ctx, t)
	if len(ns) != 1 || ns[0].Spec.ProviderID != nc.Status.ProviderID {
		t.Fatalf("expected exactly one node, for %s; got %d", nc.Status.ProviderID, len(ns))
	}
}

// settleAndExpectConsistent runs garbage collection long after the crash and
// checks that every node belongs to a NodeClaim and vice versa.
func settleAndExpectConsistent(ctx context.Context, t *testing.T, clk interface{ Step(time.Duration) }, p *process) {
	t.Helper()
	clk.Step(time.Hour)
	if _, err := p.gc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	byProviderID := map[string]bool{}
	for _, nc := range claims(ctx, t) {
		byProviderID[nc.Status.ProviderID] = true
	}
	ns := nodes(ctx, t)
	for _, n := range ns {
		if !byProviderID[n.Spec.ProviderID] {
			t.Fatalf("node %s has no NodeClaim", n.Name)
		}
	}
	if len(ns) != len(byProviderID) {
		t.Fatalf("%d nodes for %d launched NodeClaims", len(ns), len(byProviderID))
	}
}
