package lifecycle_test

import (
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestVanishedNodeClaimIsForgotten: lifecycle remembers per NodeClaim UID its
// launch result, its registration count and the status fields it applied. A
// NodeClaim that disappears without lifecycle seeing its finalizer go (here
// another actor removes the finalizer and deletes it) is reconciled once more
// by name only, and that NotFound reconcile must drop the entries: otherwise
// each such NodeClaim leaks them for the life of the process.
func TestVanishedNodeClaimIsForgotten(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("vanishing", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc) // launch and register (no KWOK delay)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !nc.StatusConditions().IsTrue(v1.ConditionTypeRegistered) {
		t.Fatalf("not registered after the first pass: %+v", nc.Status.Conditions)
	}
	if !f.ctrl.Remembers(nc.UID) {
		t.Fatal("lifecycle remembers nothing after launching and registering: the test would prove nothing")
	}

	ExpectFinalizersRemoved(f.ctx, t, e.Client, nc)
	ExpectDeleted(f.ctx, t, e.Client, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if f.ctrl.Remembers(nc.UID) {
		t.Error("lifecycle still holds entries for a NodeClaim whose Get returned NotFound")
	}
}

// TestRecreatedNodeClaimForgetsTheOldUID: a NodeClaim deleted behind
// lifecycle's back and created again under the same name is a new UID; the
// first reconcile of the new one drops the old one's entries, which no
// reconcile will name again.
func TestRecreatedNodeClaimForgetsTheOldUID(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("recreated", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	old := ExpectExists(f.ctx, t, e.Client, nc).UID
	if !f.ctrl.Remembers(old) {
		t.Fatal("lifecycle remembers nothing after the first pass")
	}

	// The claim and its node go, as a forced cleanup would remove them.
	ExpectFinalizersRemoved(f.ctx, t, e.Client, nc, nodeOf(nc))
	ExpectDeleted(f.ctx, t, e.Client, nc, nodeOf(nc))
	ExpectNotFound(f.ctx, t, e.Client, nc, nodeOf(nc))
	again := nodeClaim("recreated", "default")
	ExpectApplied(f.ctx, t, e.Client, again)
	ExpectReconciled(f.ctx, t, f.ctrl, again)
	if f.ctrl.Remembers(old) {
		t.Error("lifecycle still holds the old UID's entries after the name was reconciled as a new NodeClaim")
	}
	if !f.ctrl.Remembers(ExpectExists(f.ctx, t, e.Client, again).UID) {
		t.Error("the new NodeClaim's entries are missing")
	}
}
