package aws_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// priceOverlay is a NodeOverlay setting price (or, with adjust, adjusting it)
// for the instance types reqs select; validated gives it
// ValidationSucceeded True, as the overlay controller writes it.
func priceOverlay(name, price string, adjust, validated bool, reqs ...v1alpha1.NodeSelectorRequirement) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{Requirements: reqs}}
	if adjust {
		o.Spec.PriceAdjustment = &price
	} else {
		o.Spec.Price = &price
	}
	if validated {
		o.StatusConditions().SetTrue(v1alpha1.ConditionTypeValidationSucceeded)
	}
	return o
}

func instanceTypeIn(names ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}
}

// An instance type EC2 has no price for has no available offering, unless a
// validated NodeOverlay whose only requirement is
// node.kubernetes.io/instance-type In [...] names it with a price: its
// offerings where EC2 offers it are then available at that price (on-demand
// and spot). Overlays with other requirements, a price adjustment or not
// validated give no price. The overlays are listed again every
// OverlayPricesTTL, or at once after Reset.
func TestUnpricedInstanceTypesTakeANodeOverlayPrice(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1alpha1.NodeOverlayList{})
	t.Cleanup(func() { ExpectCleanedUp(ctx, t, e.Client, &v1alpha1.NodeOverlayList{}) })
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Now())
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	overlays := instancetype.NewOverlayPrices(e.Client, clk)
	provider := instancetype.NewProvider(ec2Client, prices, instancetype.NewUnavailableOfferings(clk), clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075, OverlayPrices: overlays})
	nc := ec2NodeClass(em, true)
	list := func() map[string]*scheduling.InstanceType {
		t.Helper()
		its, err := provider.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*scheduling.InstanceType{}
		for _, it := range its {
			out[it.Name] = it
		}
		return out
	}

	// The first listed type EC2 offers in a subnet zone but has no price for.
	var unpriced string
	its, err := provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		zones, _ := it.Requirements.Get(corev1.LabelTopologyZone)
		if _, ok := prices.OnDemandPrice(it.Name); !ok && len(zones.Values()) > 0 {
			unpriced = it.Name
			break
		}
	}
	if unpriced == "" {
		t.Fatal("the emulator's catalog has no unpriced instance type offered in a subnet zone")
	}
	expectUnavailable := func(when string) {
		t.Helper()
		for _, o := range list()[unpriced].Offerings {
			if o.Available {
				t.Fatalf("%s: unpriced %s has an available offering %+v", when, unpriced, o)
			}
		}
	}
	expectUnavailable("without overlays")

	ExpectApplied(ctx, t, e.Client,
		priceOverlay("more-requirements", "2", false, true, instanceTypeIn(unpriced),
			v1alpha1.NodeSelectorRequirement{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}),
		priceOverlay("not-in", "2", false, true, v1alpha1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"m5.large"}}),
		priceOverlay("other-key", "2", false, true, v1alpha1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}),
		priceOverlay("adjusted", "+1", true, true, instanceTypeIn(unpriced)),
		priceOverlay("not-validated", "3", false, false, instanceTypeIn(unpriced)),
	)
	clk.Step(instancetype.OverlayPricesTTL)
	expectUnavailable("with overlays that do not qualify")

	ExpectApplied(ctx, t, e.Client, priceOverlay("exact", "1.25", false, true, instanceTypeIn(unpriced, "m5.large")))
	// The overlays listed are reused until OverlayPricesTTL has passed.
	clk.Step(instancetype.OverlayPricesTTL - time.Second)
	expectUnavailable("within the TTL of the last list")
	clk.Step(time.Second)
	got := list()
	zones, _ := got[unpriced].Requirements.Get(corev1.LabelTopologyZone)
	capacityTypes := map[string]bool{}
	for _, o := range got[unpriced].Offerings {
		if o.Available != zones.Has(o.Zone) {
			t.Errorf("%s in %s: available %t, EC2 offers it there: %t", unpriced, o.Zone, o.Available, zones.Has(o.Zone))
		}
		if o.Price != 1.25 {
			t.Errorf("%s %s offering in %s priced %v, want the overlay's 1.25", unpriced, o.CapacityType, o.Zone, o.Price)
		}
		if o.Available {
			capacityTypes[o.CapacityType] = true
		}
	}
	if !capacityTypes[scheduling.CapacityTypeOnDemand] || !capacityTypes[scheduling.CapacityTypeSpot] {
		t.Errorf("available capacity types %v, want on-demand and spot", capacityTypes)
	}
	// A type EC2 prices keeps EC2's price here (the overlay controller
	// overlays it for the NodePools).
	for _, o := range got["m5.large"].Offerings {
		if o.CapacityType == scheduling.CapacityTypeOnDemand && o.Price != 0.096 {
			t.Errorf("m5.large on-demand in %s priced %v, want EC2's 0.096", o.Zone, o.Price)
		}
	}

	// Of two overlays naming the type, the later name wins.
	ExpectApplied(ctx, t, e.Client, priceOverlay("exact-later", "1.5", false, true, instanceTypeIn(unpriced)))
	overlays.Reset()
	for _, o := range list()[unpriced].Offerings {
		if o.Price != 1.5 {
			t.Fatalf("%s offering priced %v, want the later overlay's 1.5", unpriced, o.Price)
		}
	}

	// Without them (listed again at once after Reset) it is unavailable again.
	ExpectDeleted(ctx, t, e.Client, priceOverlay("exact", "1.25", false, true), priceOverlay("exact-later", "1.5", false, true))
	overlays.Reset()
	expectUnavailable("after the overlays were deleted")
}

// The bundle prices unpriced types from NodeOverlays only with the NodeOverlay
// feature gate on.
func TestBundleOverlayPricesFollowTheNodeOverlayGate(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{}, &v1alpha1.NodeOverlayList{})
	t.Cleanup(func() { ExpectCleanedUp(ctx, t, e.Client, &v1alpha1.NodeOverlayList{}) })
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	pointSDKAt(t, em)
	_, provider := parseAWS(t, em.Options().ClusterName)
	np := nodePool("default")
	ExpectApplied(ctx, t, e.Client, ec2NodeClass(em, true), np)

	// The emulator's catalog has no price for it (see the test above).
	const unpriced = "dl2q.24xlarge"
	ExpectApplied(ctx, t, e.Client, priceOverlay("exact", "1.25", false, true, instanceTypeIn(unpriced)))
	for _, gate := range []bool{false, true} {
		bundle, err := provider.New(ctx, cloudprovider.Deps{KubeClient: e.Client, Clock: clock.RealClock{},
			FeatureGates: map[string]bool{options.FeatureNodeOverlay: gate}})
		if err != nil {
			t.Fatal(err)
		}
		its, err := bundle.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		found, available := false, false
		for _, it := range its {
			if it.Name != unpriced {
				continue
			}
			found = true
			for _, o := range it.Offerings {
				available = available || o.Available
				if o.Available && o.Price != 1.25 {
					t.Errorf("gate %t: %s offering %+v, want the overlay's price", gate, unpriced, o)
				}
			}
		}
		if !found || available != gate {
			t.Errorf("gate %t: %s listed %t, available %t", gate, unpriced, found, available)
		}
	}
}
