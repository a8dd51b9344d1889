package plan_test

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/providers"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// A third provider, written as docs/architecture.md's recipe says: its
// NodeClass API, its Provider (settings, bundle, offline side) and one entry
// in the list of providers. The plugin plans and prices with it without
// naming it anywhere.

var exampleGV = schema.GroupVersion{Group: "karpenter.example.com", Version: "v1"}

// exampleNodeClass is the provider's NodeClass kind.
type exampleNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (c *exampleNodeClass) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// exampleCatalog: one type per size, the price per vCPU-hour 0.05.
var exampleCatalog = []*scheduling.InstanceType{
	fake.InstanceType("ex.small", 2, 4, 20, 0.10),
	fake.InstanceType("ex.large", 8, 16, 80, 0.40),
}

const exampleProviderIDPrefix = "example://"

type exampleProvider struct{}

func (exampleProvider) Name() string                              { return "example" }
func (exampleProvider) AddFlags(*flag.FlagSet, cloudprovider.Env) {}
func (exampleProvider) Validate() error                           { return nil }
func (exampleProvider) Offline() cloudprovider.Offline            { return exampleProvider{} }
func (exampleProvider) ClusterRules() []cloudprovider.ClusterRule { return nil }
func (exampleProvider) AdminRules() []cloudprovider.ClusterRule   { return nil }
func (exampleProvider) NodeClassGroup() string                    { return exampleGV.Group }
func (exampleProvider) Launched(n *corev1.Node) bool {
	return strings.HasPrefix(n.Spec.ProviderID, exampleProviderIDPrefix)
}
func (exampleProvider) New(context.Context, cloudprovider.Deps) (*cloudprovider.Bundle, error) {
	return nil, errors.New("the example provider runs no controllers")
}

func (exampleProvider) InstanceTypes(context.Context, client.Client, clock.Clock) (cloudprovider.CloudProvider, error) {
	return exampleCloud{}, nil
}

func (exampleProvider) NodePrice(n *corev1.Node) (float64, bool) {
	for _, it := range exampleCatalog {
		if it.Name == n.Labels[corev1.LabelInstanceTypeStable] {
			return it.Offerings[0].Price, true
		}
	}
	return 0, false
}

// exampleCloud is the provider's CloudProvider as a planner sees it: only
// Name, GetSupportedNodeClasses and GetInstanceTypes are called.
type exampleCloud struct{}

var errPlanOnly = errors.New("a plan never launches")

func (exampleCloud) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, errPlanOnly
}
func (exampleCloud) Delete(context.Context, *v1.NodeClaim) error        { return errPlanOnly }
func (exampleCloud) Get(context.Context, string) (*v1.NodeClaim, error) { return nil, errPlanOnly }
func (exampleCloud) List(context.Context) ([]*v1.NodeClaim, error)      { return nil, errPlanOnly }
func (exampleCloud) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}
func (exampleCloud) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
func (exampleCloud) Reboot(context.Context, *v1.NodeClaim, string) error {
	return cloudprovider.NewNodeRebootNotImplementedError()
}
func (exampleCloud) Name() string { return "example" }
func (exampleCloud) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&exampleNodeClass{}}
}
func (exampleCloud) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return exampleCatalog, nil
}

// TestPlanWithAThirdProvider: a NodePool on the third provider's NodeClass is
// planned with that provider's instance types, and a node it launched is
// priced from its catalog, while the compiled-in providers stay in the list.
func TestPlanWithAThirdProvider(t *testing.T) {
	s := snapshot.New("test")
	s.Store.Scheme().AddKnownTypes(exampleGV, &exampleNodeClass{})
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "example"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &v1.NodeClassReference{Group: exampleGV.Group, Kind: "exampleNodeClass", Name: "default"},
		}}},
	}
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "running", Labels: map[string]string{
			corev1.LabelInstanceTypeStable: "ex.large", corev1.LabelTopologyZone: fake.Zones[0]}},
		Spec: corev1.NodeSpec{ProviderID: exampleProviderIDPrefix + "running"},
	}
	if err := s.Add(&exampleNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, np, existing); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(plantest.PendingPod("app", "1")); err != nil {
		t.Fatal(err)
	}
	all := append(providers.All(), exampleProvider{})
	p, err := plan.PlanSnapshot(context.Background(), s, nil, nil, nil, nil, plan.Options{Now: plantest.Now, Providers: all})
	if err != nil {
		t.Fatal(err)
	}
	if p.Provider != "example" {
		t.Errorf("planned with %q, want the NodePool's provider, example", p.Provider)
	}
	if len(p.Launches) != 1 || p.Launches[0].InstanceType != "ex.small" || p.Launches[0].PricePerHour != 0.10 || len(p.Pending) != 0 {
		t.Fatalf("launches %+v, pending %+v: want one ex.small at $0.10/h", p.Launches, p.Pending)
	}
	if p.CostPerHourBefore != 0.40 || p.Unpriced != 0 {
		t.Errorf("the example node costs $%v/h before (%d unpriced), want $0.40/h from the provider's catalog", p.CostPerHourBefore, p.Unpriced)
	}
}
