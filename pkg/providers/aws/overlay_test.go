package aws_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Given the NodeOverlays, Create chooses among the NodePool's instance
// types as overlaid, as upstream's provider does: a NodeClaim requesting an
// extended resource only an overlay adds to the m5 family launches m5.large
// (cheaper than c5.large by the overlay's price), reporting the resource in
// its capacity; without the overlays no instance type fits it.
func TestCreateLaunchesAmongOverlaidInstanceTypes(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	claim := func(name string) *v1.NodeClaim {
		c := launchtest.NodeClaim(name, nc, []string{scheduling.CapacityTypeOnDemand}, "c5.large", "m5.large")
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "example.com/licence": resource.MustParse("1")}
		return c
	}
	if _, err := cp.Create(ctx, claim("default-without")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("without overlays: %v, want insufficient capacity", err)
	}

	its, err := env.InstanceTypes.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	licences := v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m5-licences"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}},
			PriceAdjustment: ptr.To("-90%"),
			Capacity:        corev1.ResourceList{"example.com/licence": resource.MustParse("3")},
		},
	}
	store := overlay.NewStore()
	store.Update(overlay.Evaluate([]v1alpha1.NodeOverlay{licences}, []overlay.Pool{{NodePool: &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, InstanceTypes: its}}, overlay.WellKnown()))
	cp.SetInstanceTypeOverlay(store)

	c := claim("default-with")
	c.Annotations = map[string]string{v1alpha1.PriceOverlayAppliedAnnotationKey: "true", v1alpha1.CapacityOverlayAppliedAnnotationKey: "true"}
	got, err := cp.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if it := got.Labels[corev1.LabelInstanceTypeStable]; it != "m5.large" {
		t.Errorf("launched %s, want m5.large", it)
	}
	if q := got.Status.Capacity["example.com/licence"]; q.Value() != 3 {
		t.Errorf("capacity %v, want example.com/licence: 3", got.Status.Capacity)
	}
	// Get reports the instance with the same overlaid capacity.
	again, err := cp.Get(ctx, got.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if q := again.Status.Capacity["example.com/licence"]; q.Value() != 3 {
		t.Errorf("Get: capacity %v, want example.com/licence: 3", again.Status.Capacity)
	}
}
