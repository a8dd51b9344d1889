package nodeoverlay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeoverlay"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// provider answers GetInstanceTypes only.
type provider struct{ its []*scheduling.InstanceType }

func (p *provider) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, fmt.Errorf("not used")
}
func (p *provider) Delete(context.Context, *v1.NodeClaim) error { return fmt.Errorf("not used") }
func (p *provider) Get(context.Context, string) (*v1.NodeClaim, error) {
	return nil, fmt.Errorf("not used")
}
func (p *provider) List(context.Context) ([]*v1.NodeClaim, error) { return nil, nil }
func (p *provider) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return p.its, nil
}
func (p *provider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}
func (p *provider) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
func (p *provider) Reboot(context.Context, *v1.NodeClaim, string) error {
	return cloudprovider.NewNodeRebootNotImplementedError()
}
func (p *provider) Name() string { return "test" }
func (p *provider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&kwokv1alpha1.KWOKNodeClass{}}
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
		it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: "on-demand", Price: price, Available: true})
	}
	return it
}

func nodeOverlay(name string, weight int32, price string, reqs ...v1alpha1.NodeSelectorRequirement) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	o.Spec.Requirements = reqs
	if weight != 0 {
		o.Spec.Weight = &weight
	}
	if price != "" {
		o.Spec.Price = &price
	}
	return o
}

func family(f string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: "example.com/family", Operator: corev1.NodeSelectorOpIn, Values: []string{f}}
}

func setup(t *testing.T) (context.Context, *provider, *overlay.Store) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		ExpectCleanedUp(ctx, t, e.Client, &v1alpha1.NodeOverlayList{}, &v1.NodePoolList{})
	})
	ExpectApplied(ctx, t, e.Client, fixtures.NodePool("default", fixtures.WithNodeClass("default")))
	return ctx, &provider{its: []*scheduling.InstanceType{instanceType("m.large", "m", 1), instanceType("c.large", "c", 1)}}, overlay.NewStore()
}

// condition returns the overlay's ValidationSucceeded as "status/reason: message".
func condition(ctx context.Context, t *testing.T, name string) (*status.Condition, *status.Condition) {
	t.Helper()
	o := ExpectExists(ctx, t, e.Client, &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return o.StatusConditions().Get(v1alpha1.ConditionTypeValidationSucceeded), o.StatusConditions().Root()
}

func prices(t *testing.T, store *overlay.Store, p *provider) map[string]float64 {
	t.Helper()
	its, err := store.ApplyAll("default", p.its)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, it := range its {
		out[it.Name] = it.Offerings[0].Price
	}
	return out
}

// Overlays of equal weight that set the price of the same offerings
// conflict: those evaluated after the first (ties go by name in reverse) are
// not applied and say with which overlay they conflict; an overlay whose
// requirement names no capacity type fails runtime validation; the others
// succeed. Raising the weight of the conflicting one resolves the conflict
// and its price wins.
func TestConditionsConflictAndRuntimeValidation(t *testing.T) {
	ctx, p, store := setup(t)
	c := nodeoverlay.NewController(e.Client, p, store, "example.com/family")
	ExpectApplied(ctx, t, e.Client,
		nodeOverlay("m-cheap", 5, "0.1", family("m")),
		nodeOverlay("wide", 5, "0.2", v1alpha1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists}),
		nodeOverlay("c-zone-b", 5, "0.3", family("c"), v1alpha1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}),
		nodeOverlay("preemptible", 0, "0", v1alpha1.NodeSelectorRequirement{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"preemptible"}}),
	)
	if _, err := store.ApplyAll("default", p.its); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Fatalf("before the first pass: %v, want unevaluated", err)
	}
	ExpectReconciled(ctx, t, c, nodeOverlay("m-cheap", 0, ""))

	// wide is evaluated first: of equal weights, the name last in order.
	cond, ready := condition(ctx, t, "m-cheap")
	if !cond.IsFalse() || cond.Reason != overlay.ReasonConflict || !strings.Contains(cond.Message, "NodeOverlay wide ") || !ready.IsFalse() {
		t.Errorf("m-cheap: ValidationSucceeded %+v, Ready %+v; want False/Conflict naming wide, Ready False", cond, ready)
	}
	cond, _ = condition(ctx, t, "wide")
	if !cond.IsTrue() {
		t.Errorf("wide: ValidationSucceeded %+v, want True", cond)
	}
	// c-zone-b selects c.large in zone-b only, which wide prices too at weight 5.
	cond, _ = condition(ctx, t, "c-zone-b")
	if !cond.IsFalse() || cond.Reason != overlay.ReasonConflict || !strings.Contains(cond.Message, "NodeOverlay wide ") {
		t.Errorf("c-zone-b: ValidationSucceeded %+v, want False/Conflict naming wide", cond)
	}
	cond, _ = condition(ctx, t, "preemptible")
	if !cond.IsFalse() || cond.Reason != overlay.ReasonRuntimeValidation || !strings.Contains(cond.Message, "preemptible") {
		t.Errorf("preemptible: ValidationSucceeded %+v, want False/RuntimeValidation naming the value", cond)
	}
	if got := prices(t, store, p); got["m.large"] != 0.2 || got["c.large"] != 0.2 {
		t.Errorf("prices %v, want wide's 0.2 everywhere (m-cheap and c-zone-b are not applied)", got)
	}

	a := ExpectExists(ctx, t, e.Client, nodeOverlay("m-cheap", 0, ""))
	a.Spec.Weight = ptr(int32(6))
	ExpectApplied(ctx, t, e.Client, a)
	ExpectReconciled(ctx, t, c, a)
	cond, ready = condition(ctx, t, "m-cheap")
	if !cond.IsTrue() || !ready.IsTrue() {
		t.Errorf("m-cheap after raising its weight: ValidationSucceeded %+v, Ready %+v, want True", cond, ready)
	}
	if got := prices(t, store, p); got["m.large"] != 0.1 || got["c.large"] != 0.2 {
		t.Errorf("prices %v, want m.large 0.1 (m-cheap, weight 6) and c.large 0.2 (wide)", got)
	}
}

func ptr[T any](v T) *T { return &v }

// Registered with a manager, the controller evaluates on its own: an overlay
// created later gets its condition and its price reaches the store, and the
// update callback runs.
func TestControllerReactsToOverlays(t *testing.T) {
	ctx, p, store := setup(t)
	c := nodeoverlay.NewController(e.Client, p, store)
	updated := make(chan struct{}, 100)
	c.OnUpdate = func() { updated <- struct{}{} }
	mgr := env.NewManager(t, e.Config, e.Client.Scheme())
	if err := c.Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	// The NodePool alone triggers a first pass.
	Eventually(t, 20*time.Second, func() error {
		if !store.Evaluated("default") {
			return fmt.Errorf("nodepool default not evaluated yet")
		}
		return nil
	})
	ExpectApplied(ctx, t, e.Client, nodeOverlay("cheap-m", 1, "0.4", family("m")))
	Eventually(t, 20*time.Second, func() error {
		cond, _ := condition(ctx, t, "cheap-m")
		if !cond.IsTrue() {
			return fmt.Errorf("ValidationSucceeded %+v", cond)
		}
		if got := prices(t, store, p); got["m.large"] != 0.4 || got["c.large"] != 1 {
			return fmt.Errorf("prices %v", got)
		}
		return nil
	})
	if len(updated) == 0 {
		t.Error("OnUpdate was not called")
	}
}
