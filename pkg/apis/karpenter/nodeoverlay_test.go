package karpenter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestNodeOverlayRoundTrips stores a NodeOverlay with every spec field set
// through the typed client, reads it back unchanged, then writes its status
// through the status subresource: the status sticks, a status write cannot
// change the spec, and a spec write cannot change the status.
func TestNodeOverlayRoundTrips(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	overlay := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip", Labels: map[string]string{"team": "a"}},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}},
				{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"spot"}},
				{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpExists},
				{Key: "example.com/legacy", Operator: corev1.NodeSelectorOpDoesNotExist},
				{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
				{Key: "karpenter.k8s.aws/instance-memory", Operator: "Gte", Values: []string{"4096"}},
				{Key: "karpenter.k8s.aws/instance-generation", Operator: "Lte", Values: []string{"7"}},
				{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpLt, Values: []string{"8"}},
			},
			PriceAdjustment: ptr.To("-15%"),
			Capacity: corev1.ResourceList{
				"example.com/gpu":      resource.MustParse("2"),
				"hugepages-2Mi":        resource.MustParse("512Mi"),
				"smarter-devices/fuse": resource.MustParse("10"),
			},
			Weight: ptr.To[int32](10),
		},
	}
	want := overlay.Spec.DeepCopy()
	if err := e.Client.Create(ctx, overlay); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, overlay) })
	got := &v1alpha1.NodeOverlay{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(overlay), got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&got.Spec, want) {
		t.Fatalf("spec read back\n%+v\nwant\n%+v", got.Spec, *want)
	}
	if got.Labels["team"] != "a" {
		t.Errorf("labels read back %v", got.Labels)
	}

	// Price instead of priceAdjustment (they are exclusive).
	got.Spec.PriceAdjustment, got.Spec.Price = nil, ptr.To("0.125")
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}

	got.StatusConditions().SetTrue(v1alpha1.ConditionTypeValidationSucceeded)
	if !got.StatusConditions().IsTrue(status.ConditionReady) {
		t.Fatalf("Ready not True with ValidationSucceeded True: %+v", got.Status.Conditions)
	}
	wantConditions := got.Status.Conditions
	got.Spec.Weight = ptr.To[int32](99) // ignored by the status subresource
	if err := e.Client.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	back := &v1alpha1.NodeOverlay{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(overlay), back); err != nil {
		t.Fatal(err)
	}
	if len(back.Status.Conditions) != len(wantConditions) {
		t.Fatalf("conditions read back %+v, want %+v", back.Status.Conditions, wantConditions)
	}
	for _, c := range wantConditions {
		b := back.StatusConditions().Get(c.Type)
		if b == nil || b.Status != c.Status || b.Reason != c.Reason || b.Message != c.Message || b.ObservedGeneration != c.ObservedGeneration || b.LastTransitionTime.Unix() != c.LastTransitionTime.Unix() {
			t.Errorf("condition %s read back %+v, want %+v", c.Type, b, c)
		}
	}
	if *back.Spec.Weight != 10 || *back.Spec.Price != "0.125" || back.Spec.PriceAdjustment != nil {
		t.Errorf("spec after the status write: weight %d price %v priceAdjustment %v", *back.Spec.Weight, back.Spec.Price, back.Spec.PriceAdjustment)
	}

	// A write of the main resource leaves the status alone.
	back.Status.Conditions = nil
	back.Spec.Weight = ptr.To[int32](20)
	if err := e.Client.Update(ctx, back); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(overlay), back); err != nil {
		t.Fatal(err)
	}
	if *back.Spec.Weight != 20 || len(back.Status.Conditions) != len(wantConditions) {
		t.Errorf("after a spec write: weight %d, conditions %+v", *back.Spec.Weight, back.Status.Conditions)
	}

	list := &v1alpha1.NodeOverlayList{}
	if err := e.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Error("list returned no NodeOverlay")
	}
}

const baseNodeOverlay = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: overlay
spec:
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`

// nodeOverlayRejections are objects upstream v1.15's CRD rejects; each
// rejection must name the field.
var nodeOverlayRejections = []invalidCase{
	{"price and priceAdjustment together", baseNodeOverlay, `spec: {price: "1.5", priceAdjustment: "+10%"}`,
		"spec", "price and priceAdjustment are mutually exclusive"},
	{"weight 0", baseNodeOverlay, `spec: {weight: 0}`, "spec.weight", "greater than or equal to 1"},
	{"weight above 10000", baseNodeOverlay, `spec: {weight: 10001}`, "spec.weight", "less than or equal to 10000"},
	{"no requirements", baseNodeOverlay, `spec: {requirements: null, price: "1"}`, "spec.requirements", "Required value"},
	{"more than 100 requirements", baseNodeOverlay, `spec: {requirements: [` + strings.Repeat(`{key: example.com/x, operator: Exists},`, 101) + `]}`,
		"spec.requirements", "must have at most 100 items"},
	{"negative price", baseNodeOverlay, `spec: {price: "-1"}`, "spec.price", "should match"},
	{"price that is not a number", baseNodeOverlay, `spec: {price: "cheap"}`, "spec.price", "should match"},
	{"priceAdjustment without a sign", baseNodeOverlay, `spec: {priceAdjustment: "10%"}`, "spec.priceAdjustment", "should match"},
	{"priceAdjustment below -100%", baseNodeOverlay, `spec: {priceAdjustment: "-101%"}`, "spec.priceAdjustment", "should match"},
	{"capacity overriding cpu", baseNodeOverlay, `spec: {capacity: {cpu: "4", example.com/gpu: "1"}}`,
		"spec.capacity", "only extended resources may be added"},
	{"capacity overriding pods", baseNodeOverlay, `spec: {capacity: {pods: "200"}}`, "spec.capacity", "only extended resources may be added"},
	{"unknown operator", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: Above, values: ["1"]}]}`,
		"spec.requirements[0].operator", "Unsupported value"},
	{"In without values", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: In, values: []}]}`,
		"spec.requirements", "operator In needs at least one value"},
	{"In with no values field", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: In}]}`,
		"spec.requirements", "operator In needs at least one value"},
	{"Gt with no values field", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: Gt}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte need exactly one value"},
	{"Gt with a value that is not an integer", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: Gt, values: ["1.5"]}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte need exactly one value"},
	{"NotIn without values", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: NotIn, values: []}]}`,
		"spec.requirements", "operator NotIn needs at least one value"},
	{"Gte with two values", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: Gte, values: ["1", "2"]}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte need exactly one value"},
	{"Lte with a negative value", baseNodeOverlay, `spec: {requirements: [{key: example.com/x, operator: Lte, values: ["-1"]}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte need exactly one value"},
	{"key in the karpenter.sh domain", baseNodeOverlay, `spec: {requirements: [{key: karpenter.sh/initialized, operator: Exists}]}`,
		"spec.requirements[0].key", `label domain "karpenter.sh" is restricted`},
	{"key kubernetes.io/hostname", baseNodeOverlay, `spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}`,
		"spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
	{"key outside upstream's karpenter.k8s.aws labels", baseNodeOverlay, `spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: Exists}]}`,
		"spec.requirements[0].key", `label domain "karpenter.k8s.aws" is restricted`},
	{"key that is not a label key", baseNodeOverlay, `spec: {requirements: [{key: "bad key!", operator: Exists}]}`,
		"spec.requirements[0].key", "should match"},
	{"key longer than 316", baseNodeOverlay, `spec: {requirements: [{key: ` + strings.Repeat("a", 317) + `, operator: Exists}]}`,
		"spec.requirements[0].key", "may not be more than 316"},
}

// TestNodeOverlayRejections: each object upstream's CRD rejects is rejected
// by ours on a real apiserver, naming the field.
func TestNodeOverlayRejections(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	for i, tc := range nodeOverlayRejections {
		t.Run(tc.name, func(t *testing.T) {
			obj := expectations.Manifest(t, tc.base, tc.patch)
			obj.SetName(fmt.Sprintf("invalid-overlay-%d", i))
			err := e.Client.Create(ctx, obj)
			if err == nil {
				_ = e.Client.Delete(ctx, obj)
				t.Fatalf("accepted, want rejection naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !expectations.NamesField(err, tc.field, tc.message) {
				t.Fatalf("rejection does not name %q with %q:\n%v", tc.field, tc.message, err)
			}
		})
	}
}

// nodeOverlayAccepted are patches of baseNodeOverlay at the edges of
// upstream's rules that upstream v1.15's CRD accepts.
var nodeOverlayAccepted = []string{
	`spec: {priceAdjustment: "-100%"}`,
	`spec: {priceAdjustment: "-99.5%"}`,
	`spec: {priceAdjustment: "+250%"}`,
	`spec: {priceAdjustment: "+0.5"}`,
	`spec: {priceAdjustment: "-.25"}`,
	`spec: {price: "0"}`,
	`spec: {price: "12.3456"}`,
	`spec: {weight: 1}`,
	`spec: {weight: 10000}`,
	`spec: {capacity: {example.com/gpu: "1", hugepages-1Gi: "2Gi"}}`,
	`spec: {requirements: [{key: example.com/x, operator: Exists}]}`,
	`spec: {requirements: [{key: example.com/x, operator: DoesNotExist}]}`,
	`spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}]}`,
	`spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]}`,
	`spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["0"]}]}`,
	`spec: {requirements: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}`,
	`spec: {requirements: [{key: example.com/custom-label, operator: NotIn, values: [a]}]}`,
	// Upstream's CRD bounds the values array itself, not its strings:
	// the apiserver applies string bounds to strings only.
	`spec: {requirements: [{key: example.com/x, operator: In, values: ["` + strings.Repeat("v", 70) + `", "not a label value!"]}]}`,
}

// TestNodeOverlayAcceptsWhatUpstreamAccepts: objects at the edges of
// upstream's rules that its CRD accepts are accepted by ours too.
func TestNodeOverlayAcceptsWhatUpstreamAccepts(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	for i, patch := range nodeOverlayAccepted {
		obj := expectations.Manifest(t, baseNodeOverlay, patch)
		obj.SetName(fmt.Sprintf("valid-overlay-%d", i))
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Errorf("%s: %v", patch, err)
			continue
		}
		_ = e.Client.Delete(ctx, obj)
	}
}

// TestNodeOverlayVerdictsEqualUpstreams creates every rejected and accepted
// case on an apiserver serving upstream v1.15.2's NodeOverlay CRD: it
// rejects and accepts exactly what ours does.
func TestNodeOverlayVerdictsEqualUpstreams(t *testing.T) {
	up := env.StartT(t, env.WithCRDDirectory(env.UpstreamCRDs(t, "karpenter.sh_nodeoverlays.yaml")))
	ctx := context.Background()
	verdict := func(name, patch string, wantAccepted bool) {
		obj := expectations.Manifest(t, baseNodeOverlay, patch)
		obj.SetName(name)
		err := up.Client.Create(ctx, obj)
		if err == nil {
			_ = up.Client.Delete(ctx, obj)
		}
		if accepted := err == nil; accepted != wantAccepted {
			t.Errorf("%s: upstream's CRD accepted=%t (%v), ours accepted=%t", patch, accepted, err, wantAccepted)
		}
	}
	for i, tc := range nodeOverlayRejections {
		verdict(fmt.Sprintf("invalid-overlay-%d", i), tc.patch, false)
	}
	for i, patch := range nodeOverlayAccepted {
		verdict(fmt.Sprintf("valid-overlay-%d", i), patch, true)
	}
}

// TestNodeOverlayKubectl: `kubectl get overlays` (upstream's short name)
// shows upstream's columns, Weight with -o wide, and the karpenter category
// includes NodeOverlays.
func TestNodeOverlayKubectl(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	obj := expectations.Manifest(t, baseNodeOverlay, `spec: {weight: 7}`)
	obj.SetName("columns")
	if err := e.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
	if got := strings.Fields(strings.SplitN(kubectl(t, "get", "overlays"), "\n", 2)[0]); strings.Join(got, " ") != "NAME READY AGE" {
		t.Errorf("kubectl get overlays columns = %v", got)
	}
	wide := strings.Split(strings.TrimSpace(kubectl(t, "get", "overlays", "columns", "-o", "wide")), "\n")
	if got := strings.Fields(wide[0]); strings.Join(got, " ") != "NAME READY AGE WEIGHT" {
		t.Errorf("kubectl get overlays -o wide columns = %v", got)
	}
	if f := strings.Fields(wide[len(wide)-1]); f[0] != "columns" || f[len(f)-1] != "7" {
		t.Errorf("kubectl get overlays -o wide row = %v, want weight 7", f)
	}
	if out := kubectl(t, "get", "karpenter"); !strings.Contains(out, "nodeoverlay.karpenter.sh/columns") {
		t.Errorf("kubectl get karpenter lacks the NodeOverlay:\n%s", out)
	}
}
