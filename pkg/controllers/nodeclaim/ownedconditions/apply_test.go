package ownedconditions_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

var (
	lifecycleTypes  = []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, "Ready"}
	disruptionTypes = []string{v1.ConditionTypeConsolidatable, v1.ConditionTypeDrifted}
)

func nodeClaim(ctx context.Context, t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{})
	nc := fixtures.NodeClaim(name)
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	ExpectApplied(ctx, t, e.Client, nc)
	return nc
}

// TestConcurrentWritersKeepEachOthersConditions: lifecycle and disruption
// candidacy write their conditions at the same time, each from the same (soon
// stale) read, round after round. No write conflicts, and in the end each
// controller's last conditions are stored side by side.
func TestConcurrentWritersKeepEachOthersConditions(t *testing.T) {
	ctx := context.Background()
	read := nodeClaim(ctx, t, "concurrent")
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	write := func(owner string, types []string, set func(round int, nc *v1.NodeClaim)) {
		defer wg.Done()
		for round := range rounds {
			nc := read.DeepCopy() // never re-read: every write after the first is from a stale copy
			set(round, nc)
			if err := ownedconditions.Apply(ctx, e.Client, nc, owner, types...); err != nil {
				errs <- fmt.Errorf("%s round %d: %w", owner, round, err)
			}
		}
	}
	wg.Add(2)
	go write(ownedconditions.LifecycleManager, lifecycleTypes, func(round int, nc *v1.NodeClaim) {
		cs := nc.StatusConditions()
		cs.SetTrue(v1.ConditionTypeRegistered)
		if round == rounds-1 {
			cs.SetTrue(v1.ConditionTypeInitialized)
		} else {
			cs.SetUnknown(v1.ConditionTypeInitialized, "NodeNotReady", fmt.Sprintf("round %d", round))
		}
	})
	go write(ownedconditions.DisruptionManager, disruptionTypes, func(round int, nc *v1.NodeClaim) {
		cs := nc.StatusConditions()
		cs.SetTrueWithReason(v1.ConditionTypeConsolidatable, v1.ConditionTypeConsolidatable, fmt.Sprintf("round %d", round))
		if round%2 == 0 {
			cs.SetTrueWithReason(v1.ConditionTypeDrifted, "NodePoolDrifted", "")
		} else {
			cs.Clear(v1.ConditionTypeDrifted)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := ExpectExists(ctx, t, e.Client, read.DeepCopy())
	cs := got.StatusConditions()
	for _, ty := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, "Ready", v1.ConditionTypeConsolidatable} {
		if !cs.IsTrue(ty) {
			t.Errorf("%s: want True, got %+v (all: %+v)", ty, cs.Get(ty), got.Status.Conditions)
		}
	}
	if c := cs.Get(v1.ConditionTypeConsolidatable); c != nil && c.Message != fmt.Sprintf("round %d", rounds-1) {
		t.Errorf("Consolidatable is not candidacy's last write: %+v", c)
	}
	// The last round (odd) cleared Drifted.
	if c := cs.Get(v1.ConditionTypeDrifted); c != nil {
		t.Errorf("Drifted: cleared by candidacy's last write, still stored: %+v", c)
	}
	if n := len(got.Status.Conditions); n != 5 {
		t.Errorf("want 5 conditions, got %d: %+v", n, got.Status.Conditions)
	}
}

// TestMergePatchFromAStaleReadLosesAConditionApplyKeeps is why: the same two
// writes from one read, as unconditional merge patches (the conditions list is
// replaced whole), keep only the second writer's conditions; as applies, both.
func TestMergePatchFromAStaleReadLosesAConditionApplyKeeps(t *testing.T) {
	ctx := context.Background()
	for _, apply := range []bool{false, true} {
		read := nodeClaim(ctx, t, fmt.Sprintf("stale-%t", apply))
		lifecycle, candidacy := read.DeepCopy(), read.DeepCopy()
		lifecycle.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
		candidacy.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
		for _, w := range []struct {
			nc    *v1.NodeClaim
			owner string
			types []string
		}{{lifecycle, ownedconditions.LifecycleManager, lifecycleTypes}, {candidacy, ownedconditions.DisruptionManager, disruptionTypes}} {
			var err error
			if apply {
				err = ownedconditions.Apply(ctx, e.Client, w.nc, w.owner, w.types...)
			} else {
				err = e.Client.Status().Patch(ctx, w.nc, client.MergeFrom(read))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		got := ExpectExists(ctx, t, e.Client, read.DeepCopy()).StatusConditions()
		both := got.IsTrue(v1.ConditionTypeRegistered) && got.IsTrue(v1.ConditionTypeConsolidatable)
		if both != apply {
			t.Errorf("apply=%t: both conditions stored = %t, want %t (Registered %+v, Consolidatable %+v)", apply, both, apply,
				got.Get(v1.ConditionTypeRegistered), got.Get(v1.ConditionTypeConsolidatable))
		}
	}
}

// TestApplyRemovesAConditionAnotherManagerWrote: a condition written before
// by a merge patch (an older Karpenter, or another writer) is co-owned, so
// leaving it out of an apply would not remove it; Apply removes it anyway.
func TestApplyRemovesAConditionAnotherManagerWrote(t *testing.T) {
	ctx := context.Background()
	nc := nodeClaim(ctx, t, "removed")
	stored := nc.DeepCopy()
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeDrifted, "NodePoolDrifted", "")
	if err := e.Client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	nc.StatusConditions().Clear(v1.ConditionTypeDrifted)
	nc.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
	if err := ownedconditions.Apply(ctx, e.Client, nc, ownedconditions.DisruptionManager, disruptionTypes...); err != nil {
		t.Fatal(err)
	}
	got := ExpectExists(ctx, t, e.Client, nc.DeepCopy()).StatusConditions()
	if c := got.Get(v1.ConditionTypeDrifted); c != nil {
		t.Errorf("Drifted still stored: %+v", c)
	}
	if !got.IsTrue(v1.ConditionTypeConsolidatable) || !got.IsTrue(v1.ConditionTypeLaunched) {
		t.Errorf("want Consolidatable and Launched True, got %+v", nc.Status.Conditions)
	}
}
