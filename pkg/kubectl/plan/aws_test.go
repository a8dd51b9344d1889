package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

// awsClass is the getting-started EC2NodeClass, Ready, with the emulator's
// discovery-tagged subnets in its status; zones are those subnets' zones.
func awsClass(em *awsemulator.Emulator) (nc *awsv1.EC2NodeClass, zones map[string]bool) {
	disc := map[string]string{"karpenter.sh/discovery": "karpenter-demo"}
	nc = &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: disc}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-karpenter-demo",
		},
	}
	zones = map[string]bool{}
	for _, s := range em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
			zones[s.Zone] = true
		}
	}
	for _, c := range awsv1.StatusConditionTypes.Dependents() {
		nc.StatusConditions().SetTrue(c)
	}
	return nc, zones
}

// awsPlan plans pods pending 3-cpu pods on NodePool "aws" (linux, on-demand,
// and extra requirements) of nc, reaching AWS as the controller does: the
// SDK's standard environment, here pointing at the emulator.
func awsPlan(t *testing.T, em *awsemulator.Emulator, nc *awsv1.EC2NodeClass, pods int, extra ...v1.NodeSelectorRequirementWithMinValues) *plan.Plan {
	t.Helper()
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "aws"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: append([]v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			}, extra...),
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
	s := snapshot.New("test")
	if err := s.Add(nc, np); err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		if err := s.Add(plantest.PendingPod(fmt.Sprintf("app-%d", i), "3")); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range em.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	cp, err := plan.CloudProvider(ctx, s, nil, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Name() != "aws" {
		t.Fatalf("a NodePool on an EC2NodeClass is planned with %q, want aws", cp.Name())
	}
	p, err := plan.NewPlanner(s, cp, plan.Options{Now: plantest.Now, Provider: cp.Name()}).Compute(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Launches) == 0 || len(p.Pending) != 0 {
		t.Fatalf("launches %+v pending %+v", p.Launches, p.Pending)
	}
	return p
}

// On an EC2NodeClass, the plan prices real EC2 instance types from the AWS
// provider, reached over the wire (the AWS emulator) with read calls only.
func TestPlanWithAWSInstanceTypes(t *testing.T) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	nc, zones := awsClass(em)
	p := awsPlan(t, em, nc, 4)
	for _, l := range p.Launches {
		if l.NodePool != "aws" || !strings.Contains(l.InstanceType, ".") || !zones[l.Zone] || l.CapacityType != v1.CapacityTypeOnDemand || l.PricePerHour <= 0 {
			t.Errorf("launch %+v", l)
		}
	}
	t.Logf("AWS plan: %+v", p.Launches)
}

// An EC2NodeClass with a cluster placement group is planned with the types
// the group takes: of t3 (burstable, which cluster groups refuse) and m5,
// only m5 is launched.
func TestPlanWithAWSPlacementGroup(t *testing.T) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	em.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	nc, _ := awsClass(em)
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("ml")}
	p := awsPlan(t, em, nc, 2, v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"t3", "m5"}})
	for _, l := range p.Launches {
		if !strings.HasPrefix(l.InstanceType, "m5.") {
			t.Errorf("launch %+v, want an m5 type (t3 is burstable, which a cluster placement group does not take)", l)
		}
	}
}
