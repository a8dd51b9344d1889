package kwok_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// With the NodeOverlays given, Create launches among the NodePool's
// instance types as overlaid: a NodeClaim requesting an extended resource
// only an overlay adds (to the m family, made cheap by the same overlay)
// launches an m type whose node reports the resource; without them it is
// insufficient capacity.
func TestCreateLaunchesAmongOverlaidInstanceTypes(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true))
	claim := func(name string) *v1.NodeClaim {
		nc := nodeClaim(name, "default",
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
		nc.Spec.Resources.Requests["example.com/licence"] = resource.MustParse("1")
		ExpectApplied(ctx, t, e.Client, nc)
		return nc
	}
	if _, err := cp.Create(ctx, claim("without")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("without overlays: %v, want insufficient capacity", err)
	}

	its, err := cp.GetInstanceTypes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	licences := v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m-licences"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: kwokv1alpha1.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
			PriceAdjustment: ptr.To("-90%"),
			Capacity:        corev1.ResourceList{"example.com/licence": resource.MustParse("2")},
		},
	}
	store := overlay.NewStore()
	store.Update(overlay.Evaluate([]v1alpha1.NodeOverlay{licences}, []overlay.Pool{{NodePool: &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, InstanceTypes: its}}, overlay.WellKnown()))
	cp.SetInstanceTypeOverlay(store)

	launched, err := cp.Create(ctx, claim("with"))
	if err != nil {
		t.Fatal(err)
	}
	if got := launched.Labels[kwokv1alpha1.InstanceFamilyLabelKey]; got != "m" {
		t.Errorf("launched family %s, want m", got)
	}
	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "with"}})
	if q := node.Status.Capacity["example.com/licence"]; q.Value() != 2 {
		t.Errorf("node capacity %v, want example.com/licence: 2", node.Status.Capacity)
	}
	if q := node.Status.Allocatable["example.com/licence"]; q.Value() != 2 {
		t.Errorf("node allocatable %v, want example.com/licence: 2", node.Status.Allocatable)
	}
}
