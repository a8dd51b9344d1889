package plan_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
)

// The plan prices as the controller does: with the snapshot's NodeOverlays
// evaluated by the controller (they carry ValidationSucceeded, which only
// the NodeOverlay gate's controller writes), an overlay taking 40% off the
// m family moves the launch for a 1-cpu pod from c-2x to m-2x at the
// overlaid price. Overlays no controller evaluated (the gate is off) change
// nothing.
func TestPlanAppliesNodeOverlaysTheControllerEvaluated(t *testing.T) {
	mCheaper := func(evaluated bool) *v1alpha1.NodeOverlay {
		o := &v1alpha1.NodeOverlay{
			ObjectMeta: metav1.ObjectMeta{Name: "m-cheaper", Generation: 1},
			Spec: v1alpha1.NodeOverlaySpec{
				Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: kwokv1alpha1.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
				PriceAdjustment: ptr.To("-40%"),
			},
		}
		if evaluated {
			o.StatusConditions().SetTrue(v1alpha1.ConditionTypeValidationSucceeded)
		}
		return o
	}
	launch := func(o *v1alpha1.NodeOverlay) (string, float64) {
		t.Helper()
		s := plantest.Base(t, "testdata/nodepool.yaml")
		if err := s.Add(plantest.PendingPod("web", "1")); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			if err := s.Add(o); err != nil {
				t.Fatal(err)
			}
		}
		p := compute(t, s)
		if len(p.Launches) != 1 {
			t.Fatalf("launches %+v, pending %v", p.Launches, p.Pending)
		}
		return p.Launches[0].InstanceType, p.Launches[0].PricePerHour
	}
	base, basePrice := launch(nil)
	if !strings.HasPrefix(base, "c-2x") {
		t.Fatalf("without overlays the launch is %s, want c-2x", base)
	}
	if got, _ := launch(mCheaper(false)); got != base {
		t.Errorf("with an overlay no controller evaluated the launch is %s, want %s", got, base)
	}
	got, price := launch(mCheaper(true))
	if !strings.HasPrefix(got, "m-2x") {
		t.Errorf("with m 40%% cheaper the launch is %s, want m-2x", got)
	}
	if price <= 0 || price >= basePrice {
		t.Errorf("launch price %v, want m-2x's price less 40%%, below c-2x's %v", price, basePrice)
	}
}
