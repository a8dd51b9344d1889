package nodeclass_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestPlacementGroupReadyWithoutSelector: a class without a selector has
// PlacementGroupReady True (it is one of Ready's conditions, as upstream).
func TestPlacementGroupReadyWithoutSelector(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("plain")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypePlacementGroupReady, metav1.ConditionTrue, v1.ConditionTypePlacementGroupReady, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
}

// TestPlacementGroupSelectorResolves: by name and by id, an available group
// makes PlacementGroupReady (and Ready) True.
func TestPlacementGroupSelectorResolves(t *testing.T) {
	f := setup(t)
	pg := f.aws.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	byName := newNodeClass("by-name")
	byName.Spec.PlacementGroupSelector = &v1.PlacementGroupSelector{Name: ptr.To("ml")}
	byID := newNodeClass("by-id")
	byID.Spec.PlacementGroupSelector = &v1.PlacementGroupSelector{ID: ptr.To(pg.ID)}
	for _, nc := range []*v1.EC2NodeClass{byName, byID} {
		ExpectApplied(f.ctx, t, e.Client, nc)
		got := f.reconcile(t, nc)
		expectCondition(t, got, v1.ConditionTypePlacementGroupReady, metav1.ConditionTrue, v1.ConditionTypePlacementGroupReady, "")
		expectCondition(t, got, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	}
}

// TestPlacementGroupSelectorMatchingNothing: an unknown name or id, or a
// group that is not available, makes PlacementGroupReady False with
// upstream's reason and a message naming the field, and holds Ready back;
// once the group is available (and the answer's minute is over) the class
// becomes Ready.
func TestPlacementGroupSelectorMatchingNothing(t *testing.T) {
	f := setup(t)
	unknown := newNodeClass("unknown-name")
	unknown.Spec.PlacementGroupSelector = &v1.PlacementGroupSelector{Name: ptr.To("ml")}
	unknownID := newNodeClass("unknown-id")
	unknownID.Spec.PlacementGroupSelector = &v1.PlacementGroupSelector{ID: ptr.To("pg-0123456789abcdef0")}
	for _, c := range []struct {
		nc      *v1.EC2NodeClass
		message string
	}{
		{unknown, `spec.placementGroupSelector: name "ml" matched no placement group`},
		{unknownID, `spec.placementGroupSelector: id "pg-0123456789abcdef0" matched no placement group`},
	} {
		ExpectApplied(f.ctx, t, e.Client, c.nc)
		got := f.reconcile(t, c.nc)
		expectCondition(t, got, v1.ConditionTypePlacementGroupReady, metav1.ConditionFalse, nodeclass.ReasonPlacementGroupNotFound, c.message)
		expectCondition(t, got, status.ConditionReady, metav1.ConditionFalse, nodeclass.ReasonPlacementGroupNotFound, "spec.placementGroupSelector")
	}

	pg := f.aws.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster", State: "deleting"})
	f.clk.Step(time.Minute)
	got := f.reconcile(t, unknown)
	expectCondition(t, got, v1.ConditionTypePlacementGroupReady, metav1.ConditionFalse, nodeclass.ReasonPlacementGroupNotFound,
		"spec.placementGroupSelector: placement group ml ("+pg.ID+") is deleting, not available")

	f.aws.SetPlacementGroupState("ml", "available")
	f.clk.Step(time.Minute)
	got = f.reconcile(t, unknown)
	expectCondition(t, got, v1.ConditionTypePlacementGroupReady, metav1.ConditionTrue, v1.ConditionTypePlacementGroupReady, "")
	expectCondition(t, got, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
}
