package provisioning_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeoverlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// familyTypes are two instance types of equal shape: c.large at 1.0 and
// m.large at 1.2 per hour, told apart by example.com/family.
func familyTypes() []*scheduling.InstanceType {
	c := fake.InstanceType("c.large", 4, 8, 40, 1.0)
	c.Requirements = c.Requirements.With(scheduling.NewRequirement("example.com/family", corev1.NodeSelectorOpIn, "c"))
	m := fake.InstanceType("m.large", 4, 8, 40, 1.2)
	m.Requirements = m.Requirements.With(scheduling.NewRequirement("example.com/family", corev1.NodeSelectorOpIn, "m"))
	return []*scheduling.InstanceType{c, m}
}

// mCheaper is a NodeOverlay taking 40% off the m family's price.
func mCheaper() *v1alpha1.NodeOverlay {
	return &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m-cheaper"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: "example.com/family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
			PriceAdjustment: ptr.To("-40%"),
		},
	}
}

// firstInstanceType is the instance type a NodeClaim lists first (the
// cheapest, the one a provider launches first).
func firstInstanceType(nc *v1.NodeClaim) string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && len(r.Values) > 0 {
			return r.Values[0]
		}
	}
	return ""
}

// With the NodeOverlay gate, the provisioner reads instance types through
// the overlay store: a NodePool the overlays have not been evaluated against
// launches nothing; after an evaluation without overlays the cheaper c.large
// is launched first; once an overlay takes 40% off the m family, the next
// launch lists m.large (0.72) first and carries the price-overlay
// annotation.
func TestNodeOverlayMovesTheNextLaunchToTheCheapenedFamily(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { ExpectCleanedUp(f.ctx, t, testEnv.Client, &v1alpha1.NodeOverlayList{}) })
	cp := &instanceTypes{its: familyTypes()}
	store := overlay.NewStore()
	prov := provisioning.NewProvisioner(testEnv.Client, overlay.Decorate(cp, store), f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second})
	overlays := nodeoverlay.NewController(testEnv.Client, cp, store)
	schedule := func() *provisioning.Result {
		t.Helper()
		f.sync(t)
		res, err := prov.Schedule(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), pendingPod("a", "3"))

	res := schedule()
	if len(res.NodeClaims) != 0 || !strings.Contains(res.SkippedNodePools["default"], "awaiting nodeoverlay evaluation") {
		t.Fatalf("before the overlays are evaluated: %d nodeclaims, skipped %v; want none, default awaiting evaluation", len(res.NodeClaims), res.SkippedNodePools)
	}

	ExpectReconciled(f.ctx, t, overlays, mCheaper())
	res = schedule()
	if len(res.NodeClaims) != 1 {
		t.Fatalf("without overlays: %d nodeclaims, want 1 (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	nc := ExpectExists(f.ctx, t, testEnv.Client, res.NodeClaims[0])
	if got := firstInstanceType(nc); got != "c.large" {
		t.Errorf("without overlays the first instance type is %s, want c.large", got)
	}
	if _, ok := nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]; ok {
		t.Errorf("annotations %v: price overlay marked without an overlay", nc.Annotations)
	}

	ExpectApplied(f.ctx, t, testEnv.Client, mCheaper())
	ExpectReconciled(f.ctx, t, overlays, mCheaper())
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("b", "3"))
	res = schedule()
	if len(res.NodeClaims) != 1 {
		t.Fatalf("with the overlay: %d nodeclaims, want 1 for pod b (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	nc = ExpectExists(f.ctx, t, testEnv.Client, res.NodeClaims[0])
	if got := firstInstanceType(nc); got != "m.large" {
		t.Errorf("with m 40%% cheaper the first instance type is %s, want m.large", got)
	}
	if nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "true" {
		t.Errorf("annotations %v, want %s: true", nc.Annotations, v1alpha1.PriceOverlayAppliedAnnotationKey)
	}
	if _, ok := nc.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey]; ok {
		t.Errorf("annotations %v: capacity overlay marked without one", nc.Annotations)
	}
	if got := res.Solve.NewClaims[0].Price; got < 0.71 || got > 0.73 {
		t.Errorf("claim price %v, want 0.72", got)
	}
}

// A pod requesting an extended resource no instance type has launches once a
// NodeOverlay adds that resource to the m family, on m.large only, and the
// NodeClaim carries the capacity-overlay annotation.
func TestNodeOverlayCapacityMakesAnExtendedResourceSchedulable(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { ExpectCleanedUp(f.ctx, t, testEnv.Client, &v1alpha1.NodeOverlayList{}) })
	cp := &instanceTypes{its: familyTypes()}
	store := overlay.NewStore()
	prov := provisioning.NewProvisioner(testEnv.Client, overlay.Decorate(cp, store), f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second})
	overlays := nodeoverlay.NewController(testEnv.Client, cp, store)
	pod := pendingPod("licensed", "1")
	pod.Spec.Containers[0].Resources.Requests["example.com/licence"] = resource.MustParse("1")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/licence": resource.MustParse("1")}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), pod)
	licences := mCheaper()
	licences.Name = "m-licences"
	licences.Spec.PriceAdjustment = nil
	licences.Spec.Capacity = corev1.ResourceList{"example.com/licence": resource.MustParse("2")}

	ExpectReconciled(f.ctx, t, overlays, licences)
	f.sync(t)
	res, err := prov.Schedule(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 0 {
		t.Fatalf("without the overlay %d nodeclaims, want none: no instance type has example.com/licence", len(res.NodeClaims))
	}

	ExpectApplied(f.ctx, t, testEnv.Client, licences)
	ExpectReconciled(f.ctx, t, overlays, licences)
	f.sync(t)
	if res, err = prov.Schedule(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 {
		t.Fatalf("with the overlay %d nodeclaims, want 1 (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	nc := ExpectExists(f.ctx, t, testEnv.Client, res.NodeClaims[0])
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && (len(r.Values) != 1 || r.Values[0] != "m.large") {
			t.Errorf("instance types %v, want m.large only", r.Values)
		}
	}
	if nc.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] != "true" {
		t.Errorf("annotations %v, want %s: true", nc.Annotations, v1alpha1.CapacityOverlayAppliedAnnotationKey)
	}
	if _, ok := nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]; ok {
		t.Errorf("annotations %v: price overlay marked without one", nc.Annotations)
	}
}
