package garbagecollection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/instance/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// The crash between CreateFleet and the status write: an instance no
// NodeClaim names is terminated once older than 30 s (its Node deleted
// with it); younger ones, tracked ones and instances that are not this
// cluster's Karpenter instances are kept.
func TestOrphansOlderThanGracePeriodAreTerminated(t *testing.T) {
	f := setup(t)
	orphan, orphanPID := f.launch(t, awstest.Launch{})
	tracked, trackedPID := f.launch(t, awstest.Launch{})
	otherCluster, _ := f.launch(t, awstest.Launch{ClusterName: "another-cluster"})
	notKarpenter, _ := f.launch(t, awstest.Launch{Tags: map[string]string{"team": "data"}})
	ExpectApplied(f.ctx, t, e.Client, nodeClaim("tracked", trackedPID), node("orphan-node", orphanPID), node("tracked-node", trackedPID))

	// 29 s: still within the window a launch needs to be recorded.
	f.clk.Step(29 * time.Second)
	deleted, pause, err := f.gc.Reconcile(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 0 || !f.alive(t, orphan) {
		t.Fatalf("a 29 s old instance must be kept, deleted %v", deleted)
	}
	if pause != garbagecollection.FastInterval {
		t.Errorf("pause %v, want %v for a young controller", pause, garbagecollection.FastInterval)
	}

	f.clk.Step(2 * time.Second)
	deleted, _, err = f.gc.Reconcile(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0] != orphan {
		t.Fatalf("deleted %v, want only the orphan %s", deleted, orphan)
	}
	if f.alive(t, orphan) {
		t.Error("the orphan must be terminated")
	}
	for _, id := range []string{tracked, otherCluster, notKarpenter} {
		if !f.alive(t, id) {
			t.Errorf("instance %s must be kept (%+v)", id, f.instance(t, id).Tags)
		}
	}
	ExpectNotFound(f.ctx, t, e.Client, node("orphan-node", orphanPID))
	ExpectExists(f.ctx, t, e.Client, node("tracked-node", trackedPID))

	// The next pass finds nothing more to do.
	if deleted, _, err = f.gc.Reconcile(f.ctx); err != nil || len(deleted) != 0 {
		t.Errorf("second pass deleted %v (err %v)", deleted, err)
	}
}

// An instance whose NodeClaim is recorded only after the window opened (the
// status write arrives late) is kept as soon as the claim names it.
func TestNodeClaimWrittenLateKeepsInstance(t *testing.T) {
	f := setup(t)
	id, pid := f.launch(t, awstest.Launch{})
	f.clk.Step(10 * time.Second)
	if deleted, _, err := f.gc.Reconcile(f.ctx); err != nil || len(deleted) != 0 {
		t.Fatalf("deleted %v err %v", deleted, err)
	}
	ExpectApplied(f.ctx, t, e.Client, nodeClaim("late", pid))
	f.clk.Step(time.Minute)
	if deleted, _, err := f.gc.Reconcile(f.ctx); err != nil || len(deleted) != 0 {
		t.Fatalf("deleted %v err %v", deleted, err)
	}
	if !f.alive(t, id) {
		t.Error("the tracked instance must be kept")
	}
}

// After 20 successful passes the pause grows from 10 s to upstream's 2 min.
func TestPauseGrowsAfterFastPasses(t *testing.T) {
	f := setup(t)
	for i := 1; i <= garbagecollection.FastPasses+1; i++ {
		_, pause, err := f.gc.Reconcile(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := garbagecollection.FastInterval
		if i > garbagecollection.FastPasses {
			want = garbagecollection.Interval
		}
		if pause != want {
			t.Fatalf("pass %d: pause %v, want %v", i, pause, want)
		}
	}
}

// Run by a manager as the binary runs it: the first pass starts at once and
// the next when the clock says so.
func TestGarbageCollectorRunsOnItsOwn(t *testing.T) {
	f := setup(t)
	orphan, _ := f.launch(t, awstest.Launch{})
	mgr := env.NewManager(t, e.Config, e.Scheme)
	if err := f.gc.Register(mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(f.ctx, t, mgr)
	// The first pass ran (and kept the young orphan) once the collector waits on the clock.
	Eventually(t, 30*time.Second, func() error {
		if !f.clk.HasWaiters() {
			return fmt.Errorf("the collector has not finished its first pass")
		}
		return nil
	})
	if !f.alive(t, orphan) {
		t.Fatal("the first pass must keep a young orphan")
	}
	f.clk.Step(garbagecollection.FastInterval + garbagecollection.GracePeriod)
	Eventually(t, 30*time.Second, func() error {
		if f.alive(t, orphan) {
			return fmt.Errorf("orphan %s still %s", orphan, f.instance(t, orphan).State)
		}
		return nil
	})
}
