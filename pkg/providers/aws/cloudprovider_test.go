package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e, dualStackServices) }

func setup(t *testing.T) (context.Context, *aws.CloudProvider, *awsemulator.Emulator) {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Now())
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	its := instancetype.NewProvider(ec2Client, prices, instancetype.NewUnavailableOfferings(clk), clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075})
	return ctx, aws.New(e.Client, its), em
}

func nodePool(nodeClassName string) *v1.NodePool {
	return fixtures.NodePool("default", fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef(nodeClassName)))
}

// ec2NodeClass is an AL2023 class; ready gives it the status the EC2NodeClass
// controller writes (subnets of every emulator zone, Ready=True).
func ec2NodeClass(em *awsemulator.Emulator, ready bool) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "karpenter-demo"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "karpenter-demo"}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-karpenter-demo",
		},
	}
	if !ready {
		return nc
	}
	for _, s := range em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
		}
	}
	for _, c := range awsv1.StatusConditionTypes.Dependents() {
		nc.StatusConditions().SetTrue(c)
	}
	return nc
}

func TestGetInstanceTypesOfAReadyNodeClass(t *testing.T) {
	ctx, cp, em := setup(t)
	np := nodePool("default")
	ExpectApplied(ctx, t, e.Client, ec2NodeClass(em, true), np)
	its, err := cp.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 1363 {
		t.Fatalf("%d instance types, want 1,363", len(its))
	}
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		alloc := it.Allocatable()
		if q := alloc[corev1.ResourceMemory]; q.String() != "6903Mi" {
			t.Errorf("m5.large allocatable memory %s, want 6903Mi", q.String())
		}
		if len(it.Offerings) != 8 {
			t.Errorf("m5.large has %d offerings, want 4 zones x 2 capacity types", len(it.Offerings))
		}
		return
	}
	t.Fatal("m5.large not listed")
}

// A NodeClass that cannot be used is a NodeClassNotReadyError saying why.
func TestGetInstanceTypesOfUnusableNodeClasses(t *testing.T) {
	ctx, cp, em := setup(t)
	expectNotReady := func(np *v1.NodePool, want string) {
		t.Helper()
		_, err := cp.GetInstanceTypes(ctx, np)
		if !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want a NodeClassNotReadyError containing %q", err, want)
		}
	}
	np := nodePool("default")
	ExpectApplied(ctx, t, e.Client, np)
	expectNotReady(np, `EC2NodeClass "default" of NodePool "default" not found`)

	nc := ec2NodeClass(em, false)
	ExpectApplied(ctx, t, e.Client, nc)
	expectNotReady(np, `EC2NodeClass "default" is not ready: it has not been reconciled yet`)

	nc.StatusConditions().SetFalse(awsv1.ConditionTypeSubnetsReady, "SubnetsNotFound", "SubnetSelector did not match any Subnets")
	ExpectStatusUpdated(ctx, t, e.Client, nc)
	expectNotReady(np, "SubnetSelector did not match any Subnets")

	kwok := nodePool("default")
	kwok.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	expectNotReady(kwok, "supports EC2NodeClass.karpenter.k8s.aws only")
}

func TestProviderIdentity(t *testing.T) {
	ctx, cp, _ := setup(t)
	if cp.Name() != "aws" {
		t.Errorf("Name() = %q", cp.Name())
	}
	if classes := cp.GetSupportedNodeClasses(); len(classes) != 1 {
		t.Errorf("supported NodeClasses %v, want EC2NodeClass only", classes)
	} else if _, ok := classes[0].(*awsv1.EC2NodeClass); !ok {
		t.Errorf("supported NodeClass %T, want *EC2NodeClass", classes[0])
	}
	// Upstream's policies: every condition the node monitoring agent
	// reports, GPU faults told apart by the XID in their reason.
	if err := disruption.ValidateRepairPolicies(cp.RepairPolicies()); err != nil {
		t.Fatalf("repair policies: %v", err)
	}
	tolerations := map[string]time.Duration{}
	for _, p := range cp.RepairPolicies() {
		if p.TerminationGracePeriod == nil || p.Action != cloudprovider.ReplaceNode {
			t.Errorf("policy %+v: want a drain bound and ReplaceNode", p)
		}
		tolerations[string(p.ConditionType)+"="+string(p.ConditionStatus)+"/"+p.ReasonRegex] = p.TolerationDuration
	}
	if len(tolerations) != 9 || tolerations["AcceleratedHardwareReady=False/.*XID(64|74|79|119|120).*"] != 10*time.Minute ||
		tolerations["AcceleratedHardwareReady=False/"] != 30*time.Minute || tolerations["KernelReady=False/.*"] != 30*time.Minute || tolerations["Ready=Unknown/.*"] != 30*time.Minute {
		t.Errorf("repair policies %v", tolerations)
	}
	// Built without an instance provider: it says so instead of launching.
	_, err := cp.Create(ctx, &v1.NodeClaim{})
	if !cloudprovider.IsCreateError(err) || !strings.Contains(err.Error(), "without an instance provider") {
		t.Errorf("Create: %v, want a CreateError saying there is no instance provider", err)
	}
	if _, err := cp.List(ctx); err == nil || !strings.Contains(err.Error(), "without an instance provider") {
		t.Errorf("List: %v", err)
	}
}
