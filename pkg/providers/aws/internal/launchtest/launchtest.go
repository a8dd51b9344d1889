// Package launchtest wires the AWS launch path (launch templates, instance
// provider, instance types) against an emulator for tests, with an
// EC2NodeClass resolved the way the EC2NodeClass controller resolves it.
package launchtest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	awsprovider "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/batcher"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Env is one emulator and the launch path over it.
type Env struct {
	Emulator        *awsemulator.Emulator
	Config          aws.Config
	Clock           *clocktesting.FakeClock
	EC2             *ec2.Client
	Providers       nodeclass.Providers
	Unavailable     *instancetype.UnavailableOfferings
	InstanceTypes   *instancetype.Provider
	LaunchTemplates *launchtemplate.Provider
	Instances       *instance.Provider
	ClusterName     string
}

// New starts an emulator for t and builds the providers. mutate adjusts the
// instance type provider's options (e.g. ZonalShifts) first; their
// NodeClassCEL is the launch templates' too.
func New(t testing.TB, mutate ...func(*instancetype.Options)) *Env {
	t.Helper()
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	return NewOn(t, em, mutate...)
}

// NewOn builds the providers over em.
func NewOn(t testing.TB, em *awsemulator.Emulator, mutate ...func(*instancetype.Options)) *Env {
	t.Helper()
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := &settings.Options{ClusterName: em.Options().ClusterName, VMMemoryOverheadPercent: 0.075,
		AMIRefreshInterval: time.Minute, SubnetRefreshInterval: time.Minute}
	providers := awsprovider.NewProviders(cfg, opts, nil, clk)
	ec2api := providers.EC2
	prices := pricing.NewProvider(ec2api, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	unavailable := instancetype.NewUnavailableOfferings(clk)
	itOpts := instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075,
		ReservationCounts: providers.CapacityReservations.Availability()}
	for _, m := range mutate {
		m(&itOpts)
	}
	its := instancetype.NewProvider(ec2api, prices, unavailable, clk, itOpts)
	resolver := amifamily.NewResolver(amifamily.WithNodeClassCEL(itOpts.NodeClassCEL, its.ENILimits))
	lts := launchtemplate.NewProvider(ec2api, resolver, clk, launchtemplate.Options{
		ClusterName: opts.ClusterName, EKS: eks.NewFromConfig(cfg),
	})
	// A wider idle window than production's 35 ms, so that concurrent test
	// launches on a loaded machine still meet in one batch.
	insts := instance.NewProvider(ec2api, lts, providers.Subnets, unavailable, clk, instance.Options{ClusterName: opts.ClusterName,
		Reservations: providers.CapacityReservations.Availability(),
		Batch:        batcher.Options{IdleTimeout: 150 * time.Millisecond}})
	its.SetPlacementGroups(providers.PlacementGroups)
	insts.SetPlacementGroups(providers.PlacementGroups)
	return &Env{Emulator: em, Config: cfg, Clock: clk, EC2: ec2api, Providers: providers, Unavailable: unavailable,
		InstanceTypes: its, LaunchTemplates: lts, Instances: insts, ClusterName: opts.ClusterName}
}

// NodeClass is an AL2023 class selecting the emulator's discovery-tagged
// subnets and security groups, with its status resolved as the EC2NodeClass
// controller writes it (Ready).
func (e *Env) NodeClass(t testing.TB, name string) *awsv1.EC2NodeClass {
	t.Helper()
	disc := map[string]string{"karpenter.sh/discovery": e.ClusterName}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "0b3c8a52-5c4f-4d3c-9d1e-" + "000000000001"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: disc}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-" + e.ClusterName,
			Tags:                       map[string]string{"team": "launch"},
		},
	}
	e.Resolve(t, nc)
	return nc
}

// Resolve fills nc's status from the emulator.
func (e *Env) Resolve(t testing.TB, nc *awsv1.EC2NodeClass) {
	t.Helper()
	ctx := context.Background()
	subnets, err := e.Providers.Subnets.List(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.Subnets = nil
	for _, s := range subnets.Subnets {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
	}
	sgs, err := e.Providers.SecurityGroups.List(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.SecurityGroups = nil
	for _, g := range sgs.SecurityGroups {
		nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, awsv1.SecurityGroup{ID: g.ID, Name: g.Name})
	}
	amis, err := e.Providers.AMIs.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.AMIs = nil
	for _, a := range amis.AMIs {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements, Deprecated: a.Deprecated})
	}
	if nc.Spec.Role != "" {
		name, err := e.Providers.InstanceProfiles.Ensure(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		nc.Status.InstanceProfile = name
	}
	nc.Status.CapacityReservations = nil
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		res, err := e.Providers.CapacityReservations.List(ctx, nc.Spec.CapacityReservationSelectorTerms)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Reservations {
			nc.Status.CapacityReservations = append(nc.Status.CapacityReservations, r.Status(e.Clock.Now()))
		}
	}
	for _, c := range awsv1.StatusConditionTypes.Dependents() {
		nc.StatusConditions().SetTrue(c)
	}
}

// NodeClaim of NodePool "default" for class nc, limited to instanceTypes
// (none: any) and capacityTypes.
func NodeClaim(name string, nc *awsv1.EC2NodeClass, capacityTypes []string, instanceTypes ...string) *v1.NodeClaim {
	reqs := []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
	}
	if len(instanceTypes) > 0 {
		reqs = append(reqs, v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: instanceTypes})
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: reqs,
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name},
		},
	}
}

// Tags are the tags the CloudProvider gives a launch of nodeClaim.
func (e *Env) Tags(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim) map[string]string {
	out := map[string]string{}
	for k, v := range nc.Spec.Tags {
		out[k] = v
	}
	out[awsv1.TagClusterPrefix+e.ClusterName] = "owned"
	out[awsv1.TagEKSClusterName] = e.ClusterName
	out[awsv1.TagNodePool] = nodeClaim.Labels[v1.NodePoolLabelKey]
	out[awsv1.TagEC2NodeClass] = nc.Name
	return out
}

// InstanceTypes of nc that meet nodeClaim's requirements.
func (e *Env) InstanceTypesFor(t testing.TB, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim) []*scheduling.InstanceType {
	t.Helper()
	all, err := e.InstanceTypes.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	reqs := instance.Requirements(nodeClaim)
	var out []*scheduling.InstanceType
	for _, it := range all {
		if reqs.Has(corev1.LabelInstanceTypeStable, it.Name) && reqs.Intersects(it.Requirements) == nil {
			out = append(out, it)
		}
	}
	return out
}
