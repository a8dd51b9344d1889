package overlay_test

import (
	"errors"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func TestPriceAdjustmentParsing(t *testing.T) {
	for _, tc := range []struct {
		change string
		price  float64
		want   float64
	}{
		{"0.25", 1, 0.25},         // price: absolute
		{"0", 1, 0},               // price: free
		{"+0.5", 1, 1.5},          // amount added
		{"-0.25", 1, 0.75},        // amount taken away
		{"-2", 1, 0},              // never below zero
		{"+10%", 2, 2.2},          // percentage added
		{"-40%", 1, 0.6},          // percentage taken away
		{"-100%", 3, 0},           // all of it
		{"+.5", 1, 1.5},           // no leading digit
		{"-12.5%", 8, 7},          // fractional percentage
		{"+1000%", 0.1, 1.1},      // large increase
		{"", 1.3, 1.3},            // nothing to change
		{"not-a-price", 1.3, 1.3}, // unparsable: unchanged
	} {
		if got := overlay.AdjustedPrice(tc.price, tc.change); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("AdjustedPrice(%v, %q) = %v, want %v", tc.price, tc.change, got, tc.want)
		}
	}
	for _, bad := range []string{"", "10%", "abc", "+", "-x%"} {
		if _, err := overlay.ParsePriceChange(bad); err == nil {
			t.Errorf("ParsePriceChange(%q) accepted", bad)
		}
	}
	c, err := overlay.ParsePriceChange("-40%")
	if err != nil || c.Absolute || !c.Percent || c.Value != -40 {
		t.Errorf("ParsePriceChange(-40%%) = %+v, %v", c, err)
	}
}

func nodePool(name string, labels map[string]string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.ObjectMeta.Labels = labels
	return np
}

func instanceType(name, family string, price float64) *scheduling.InstanceType {
	it := &scheduling.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement("example.com/family", corev1.NodeSelectorOpIn, family),
		),
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
	}
	for _, z := range []string{"zone-a", "zone-b"} {
		for _, ct := range []string{"on-demand", "spot"} {
			p := price
			if ct == "spot" {
				p = price / 2
			}
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: ct, Price: p, Available: true})
		}
	}
	return it
}

func nodeOverlay(name string, weight int32, reqs ...v1alpha1.NodeSelectorRequirement) v1alpha1.NodeOverlay {
	o := v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	o.Spec.Requirements = reqs
	if weight != 0 {
		o.Spec.Weight = &weight
	}
	return o
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func ptr[T any](v T) *T { return &v }

var wellKnown = overlay.WellKnown("example.com/family")

func TestSelectionByTypeLabelZoneCapacityTypeAndPool(t *testing.T) {
	np := nodePool("default", map[string]string{"team": "a"})
	it := instanceType("m.large", "m", 1)
	sel := func(reqs ...v1alpha1.NodeSelectorRequirement) int {
		o := nodeOverlay("x", 0, reqs...)
		return len(selected(np, it, &o))
	}
	for _, tc := range []struct {
		name string
		reqs []v1alpha1.NodeSelectorRequirement
		want int
	}{
		{"no requirements select every offering", nil, 4},
		{"instance type label", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m.large")}, 4},
		{"other instance type", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c.large")}, 0},
		{"provider label", []v1alpha1.NodeSelectorRequirement{req("example.com/family", corev1.NodeSelectorOpIn, "m")}, 4},
		{"provider label NotIn", []v1alpha1.NodeSelectorRequirement{req("example.com/family", corev1.NodeSelectorOpNotIn, "m")}, 0},
		{"capacity type", []v1alpha1.NodeSelectorRequirement{req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")}, 2},
		{"zone", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")}, 2},
		{"zone and capacity type", []v1alpha1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"), req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")}, 1},
		{"nodepool", []v1alpha1.NodeSelectorRequirement{req(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default")}, 4},
		{"other nodepool", []v1alpha1.NodeSelectorRequirement{req(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "other")}, 0},
		{"template label", []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a")}, 4},
		{"template label other value", []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "b")}, 0},
		{"label nothing defines", []v1alpha1.NodeSelectorRequirement{req("example.com/unknown", corev1.NodeSelectorOpIn, "x")}, 0},
		{"label nothing defines, DoesNotExist", []v1alpha1.NodeSelectorRequirement{req("example.com/unknown", corev1.NodeSelectorOpDoesNotExist)}, 4},
	} {
		if got := sel(tc.reqs...); got != tc.want {
			t.Errorf("%s: %d offerings selected, want %d", tc.name, got, tc.want)
		}
	}
}

// selected applies a one-overlay evaluation that sets every selected
// offering's price to 0 and counts the offerings so priced.
func selected(np *v1.NodePool, it *scheduling.InstanceType, o *v1alpha1.NodeOverlay) []int {
	o = o.DeepCopy()
	o.Spec.Price = ptr("0")
	store := overlay.NewStore()
	store.Update(overlay.Evaluate([]v1alpha1.NodeOverlay{*o}, []overlay.Pool{{NodePool: np, InstanceTypes: []*scheduling.InstanceType{it}}}, wellKnown))
	its, err := store.ApplyAll(np.Name, []*scheduling.InstanceType{it})
	if err != nil {
		panic(err)
	}
	var out []int
	for i, off := range its[0].Offerings {
		if off.PriceOverlaid {
			out = append(out, i)
		}
	}
	return out
}

func TestHigherWeightWinsAndLowerFillsTheRest(t *testing.T) {
	np := nodePool("default", nil)
	m := instanceType("m.large", "m", 1)
	c := instanceType("c.large", "c", 1)
	cheap := nodeOverlay("cheap-m", 10, req("example.com/family", corev1.NodeSelectorOpIn, "m"))
	cheap.Spec.PriceAdjustment = ptr("-40%")
	cheap.Spec.Capacity = corev1.ResourceList{"example.com/licence": resource.MustParse("1")}
	all := nodeOverlay("all-dearer", 1)
	all.Spec.PriceAdjustment = ptr("+0.5")
	all.Spec.Capacity = corev1.ResourceList{"example.com/licence": resource.MustParse("5"), "hugepages-2Mi": resource.MustParse("1Gi")}
	ev := overlay.Evaluate([]v1alpha1.NodeOverlay{all, cheap}, []overlay.Pool{{NodePool: np, InstanceTypes: []*scheduling.InstanceType{m, c}}}, wellKnown)
	if len(ev.Conflicts) != 0 || len(ev.Invalid) != 0 {
		t.Fatalf("conflicts %v, invalid %v", ev.Conflicts, ev.Invalid)
	}
	store := overlay.NewStore()
	store.Update(ev)
	its, err := store.ApplyAll("default", []*scheduling.InstanceType{m, c})
	if err != nil {
		t.Fatal(err)
	}
	if got := its[0].Offerings[0].Price; math.Abs(got-0.6) > 1e-9 {
		t.Errorf("m on-demand price %v, want 0.6 (-40%%, the higher weight)", got)
	}
	if got := its[1].Offerings[0].Price; math.Abs(got-1.5) > 1e-9 {
		t.Errorf("c on-demand price %v, want 1.5 (+0.5)", got)
	}
	if q := its[0].Capacity["example.com/licence"]; q.Value() != 1 {
		t.Errorf("m licence %v, want 1 (the higher weight)", q.String())
	}
	if q := its[0].Capacity["hugepages-2Mi"]; q.String() != "1Gi" {
		t.Errorf("m hugepages %v, want 1Gi (the lower weight adds what the higher does not set)", q.String())
	}
	if !its[0].CapacityOverlaid || !its[0].Offerings[0].PriceOverlaid {
		t.Errorf("overlaid flags not set")
	}
	if m.Offerings[0].Price != 1 || m.CapacityOverlaid || len(m.Capacity) != 1 {
		t.Errorf("the provider's instance type was modified")
	}
	again, _ := store.ApplyAll("default", []*scheduling.InstanceType{m, c})
	if again[0] != its[0] {
		t.Errorf("an unchanged instance type is not returned as the same overlaid object")
	}
	m.Offerings[0].Price = 2
	changed, _ := store.ApplyAll("default", []*scheduling.InstanceType{m, c})
	if changed[0] == its[0] || math.Abs(changed[0].Offerings[0].Price-1.2) > 1e-9 {
		t.Errorf("a provider price change is not followed: %v", changed[0].Offerings[0].Price)
	}
}

func TestEqualWeightConflictIsNotApplied(t *testing.T) {
	np := nodePool("default", nil)
	m := instanceType("m.large", "m", 1)
	c := instanceType("c.large", "c", 1)
	a := nodeOverlay("a", 5, req("example.com/family", corev1.NodeSelectorOpIn, "m"))
	a.Spec.Price = ptr("0.1")
	b := nodeOverlay("b", 5)
	b.Spec.Price = ptr("0.2")
	// Same weight, but different capacity resources: no conflict.
	capA := nodeOverlay("cap-a", 5)
	capA.Spec.Capacity = corev1.ResourceList{"example.com/x": resource.MustParse("1")}
	capB := nodeOverlay("cap-b", 5)
	capB.Spec.Capacity = corev1.ResourceList{"example.com/y": resource.MustParse("1")}
	// Same weight and resource: conflict.
	capC := nodeOverlay("cap-c", 5, req("example.com/family", corev1.NodeSelectorOpIn, "c"))
	capC.Spec.Capacity = corev1.ResourceList{"example.com/x": resource.MustParse("2")}
	ev := overlay.Evaluate([]v1alpha1.NodeOverlay{a, b, capA, capB, capC}, []overlay.Pool{{NodePool: np, InstanceTypes: []*scheduling.InstanceType{m, c}}}, wellKnown)
	// Ties are evaluated by name in reverse: b before a, cap-c before cap-b before cap-a.
	if got := ev.Conflicts["a"]; len(got) != 1 || got[0] != "b" {
		t.Errorf("a conflicts with %v, want [b]", got)
	}
	if got := ev.Conflicts["cap-a"]; len(got) != 1 || got[0] != "cap-c" {
		t.Errorf("cap-a conflicts with %v, want [cap-c]", got)
	}
	for _, ok := range []string{"b", "cap-b", "cap-c"} {
		if _, bad := ev.Conflicts[ok]; bad {
			t.Errorf("%s reported in conflict", ok)
		}
	}
	store := overlay.NewStore()
	store.Update(ev)
	its, _ := store.ApplyAll("default", []*scheduling.InstanceType{m, c})
	if got := its[0].Offerings[0].Price; got != 0.2 {
		t.Errorf("m price %v, want 0.2 (b; the conflicting a is not applied)", got)
	}
	if _, ok := its[0].Capacity["example.com/x"]; ok {
		t.Errorf("m got example.com/x from the conflicting cap-a")
	}
	if q := its[1].Capacity["example.com/x"]; q.Value() != 2 {
		t.Errorf("c example.com/x %v, want 2 (cap-c)", q.String())
	}
}

func TestInvalidOverlaysAndUnevaluatedPools(t *testing.T) {
	bad := nodeOverlay("bad", 0, req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "preemptible"))
	cpu := nodeOverlay("cpu", 0)
	cpu.Spec.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	value := nodeOverlay("value", 0, req("team", corev1.NodeSelectorOpIn, "not a label value"))
	ev := overlay.Evaluate([]v1alpha1.NodeOverlay{bad, cpu, value}, []overlay.Pool{{NodePool: nodePool("default", nil)}}, wellKnown)
	for _, n := range []string{"bad", "cpu", "value"} {
		if ev.Invalid[n] == nil {
			t.Errorf("%s not reported invalid", n)
		}
	}
	store := overlay.NewStore()
	if _, err := store.ApplyAll("default", nil); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Errorf("before any evaluation: %v, want an UnevaluatedNodePoolError", err)
	}
	store.Update(ev)
	if _, err := store.ApplyAll("default", nil); err != nil {
		t.Errorf("evaluated pool: %v", err)
	}
	var unevaluated *cloudprovider.UnevaluatedNodePoolError
	if _, err := store.ApplyAll("other", nil); !errors.As(err, &unevaluated) || unevaluated.NodePool != "other" {
		t.Errorf("pool not in the evaluation: %v", err)
	}
}
