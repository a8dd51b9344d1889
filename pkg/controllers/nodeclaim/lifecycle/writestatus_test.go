package lifecycle_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestStatusWriteFromAStaleReadKeepsFields: lifecycle applies its status
// fields and conditions without a lock; a later pass that read the NodeClaim
// from before that write (a cache behind lifecycle's own write) must not
// remove the provider ID, node name or capacity it no longer sees.
func TestStatusWriteFromAStaleReadKeepsFields(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("stale", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	read := nc.DeepCopy() // the read both passes start from

	launched := read.DeepCopy()
	launched.Status.ProviderID = "kwok://stale"
	launched.Status.NodeName = "stale"
	launched.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	launched.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	if err := f.ctrl.WriteStatus(f.ctx, read, launched); err != nil {
		t.Fatal(err)
	}

	// The second pass still sees the NodeClaim as it was before the first
	// write; its steps set Launched again (the launch cache) and Initialized.
	stale := read.DeepCopy()
	stale.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	stale.StatusConditions().SetUnknown(v1.ConditionTypeInitialized, "NodeNotReady", "stale pass")
	if err := f.ctrl.WriteStatus(f.ctx, read, stale); err != nil {
		t.Fatal(err)
	}

	got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	if got.Status.ProviderID != "kwok://stale" || got.Status.NodeName != "stale" || got.Status.Capacity.Cpu().String() != "4" {
		t.Errorf("fields lost by the stale pass: providerID %q nodeName %q capacity %v", got.Status.ProviderID, got.Status.NodeName, got.Status.Capacity)
	}
	if c := got.StatusConditions().Get(v1.ConditionTypeInitialized); c == nil || c.Message != "stale pass" {
		t.Errorf("Initialized: want the second pass's, got %+v", c)
	}
}
