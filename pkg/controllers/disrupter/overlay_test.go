package disrupter_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeoverlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// With the NodeOverlay gate, consolidation prices through the overlays: a
// c-2x node running a 1-cpu pod is the cheapest fit and stays; once an
// overlay takes 40% off the m family, m-2x is cheaper and consolidation
// replaces the node with it, the replacement marked as priced by an
// overlay.
func TestConsolidationPrefersAFamilyANodeOverlayCheapened(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { ExpectCleanedUp(f.ctx, t, testEnv.Client, &v1alpha1.NodeOverlayList{}) })
	store := overlay.NewStore()
	priced := overlay.Decorate(f.cp, store)
	prov := provisioning.NewProvisioner(testEnv.Client, priced, f.cluster, f.recorder, f.clock, provisioning.Options{SyncTimeout: 2 * time.Second})
	f.ctrl = disrupter.NewController(testEnv.Client, f.cluster, prov, priced, f.queue, f.recorder, f.clock, disrupter.Options{})
	overlays := nodeoverlay.NewController(testEnv.Client, f.cp, store)
	mCheaper := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m-cheaper"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.kwok.sh/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
			PriceAdjustment: ptr.To("-40%"),
		},
	}

	f.node(t, "small", "c-2x-amd64-linux")
	f.pod(t, "web", "small", "1", nil)
	ExpectReconciled(f.ctx, t, overlays, mCheaper)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("without overlays the c-2x node is the cheapest fit, yet the pass returned %+v", r)
	}

	ExpectApplied(f.ctx, t, testEnv.Client, mCheaper)
	ExpectReconciled(f.ctx, t, overlays, mCheaper)
	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("with m 40%% cheaper, want a replacement started, got %+v", r)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	var repl *v1.NodeClaim
	for i := range ncs.Items {
		if ncs.Items[i].Name != "small" {
			repl = &ncs.Items[i]
		}
	}
	if repl == nil || len(ncs.Items) != 2 {
		t.Fatalf("want exactly one replacement NodeClaim, got %d NodeClaims", len(ncs.Items))
	}
	for _, r := range repl.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && (len(r.Values) == 0 || r.Values[0] != "m-2x-amd64-linux") {
			t.Errorf("replacement instance types %v, want m-2x-amd64-linux first", r.Values)
		}
	}
	if repl.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "true" {
		t.Errorf("replacement annotations %v, want %s: true", repl.Annotations, v1alpha1.PriceOverlayAppliedAnnotationKey)
	}
}
