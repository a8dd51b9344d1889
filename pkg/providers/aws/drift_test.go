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
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// driftFixture: one m5.large instance launched in the emulator with two
// security groups, an EC2NodeClass whose status matches it exactly, and the
// NodeClaim of the instance carrying the class's hash.
type driftFixture struct {
	ctx      context.Context
	aws      *awsemulator.Emulator
	drift    *aws.Drift
	inst     awsemulator.Instance
	sgs      []string
	nc       *awsv1.EC2NodeClass
	claim    *v1.NodeClaim
	subnets  []awsemulator.Subnet
	otherAMI string
}

func setupDrift(t *testing.T, withInstanceTypes bool) *driftFixture {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &awsv1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	clk := clocktesting.NewFakeClock(time.Now())
	ec2api := ec2.NewFromConfig(cfg)
	instances := instance.NewProvider(ec2api, nil, nil, nil, clk, instance.Options{ClusterName: "karpenter-demo"})
	var its *instancetype.Provider
	if withInstanceTypes {
		prices := pricing.NewProvider(ec2api, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
		its = instancetype.NewProvider(ec2api, prices, instancetype.NewUnavailableOfferings(clk), clk,
			instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075})
	}
	f := &driftFixture{ctx: ctx, aws: em, drift: aws.NewDrift(e.Client, instances, its)}

	var vpc string
	for _, s := range em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			f.subnets = append(f.subnets, s)
			vpc = s.VPCID
		}
	}
	for _, name := range []string{"drift-a", "drift-b"} {
		f.sgs = append(f.sgs, em.AddSecurityGroup(awsemulator.SecurityGroup{Name: name, VPCID: vpc}).ID)
	}
	var image string
	for _, img := range em.Images() {
		if img.Architecture == "x86_64" && img.Platform == "" {
			if image == "" {
				image = img.ID
			} else if f.otherAMI == "" {
				f.otherAMI = img.ID
			}
		}
	}
	id := awstest.LaunchInstance(ctx, t, cfg, awstest.Launch{ClusterName: "karpenter-demo", NodePool: "default", NodeClass: "default",
		SubnetID: f.subnets[0].ID, ImageID: image, SecurityGroupIDs: f.sgs})
	for _, in := range em.Instances() {
		if in.ID == id {
			f.inst = in
		}
	}
	if f.inst.ImageID != image || f.inst.SubnetID != f.subnets[0].ID || len(f.inst.SecurityGroupIDs) != 2 {
		t.Fatalf("launched %+v", f.inst)
	}

	f.nc = ec2NodeClass(em, true)
	f.nc.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "100", awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion}
	f.nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: f.sgs[1], Name: "drift-b"}, {ID: f.sgs[0], Name: "drift-a"}}
	f.nc.Status.AMIs = []awsv1.AMI{{ID: image, Name: "standard", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}}}
	ExpectApplied(ctx, t, e.Client, f.nc)

	f.claim = &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "drift", Annotations: map[string]string{
			awsv1.AnnotationEC2NodeClassHash: "100", awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion,
		}, Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelArchStable: "amd64"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: f.nc.Name},
		},
	}
	f.claim.Status.ProviderID = "aws:///" + f.inst.Zone + "/" + f.inst.ID
	ExpectApplied(ctx, t, e.Client, f.claim)
	return f
}

// expect applies the class's status as mutate leaves it and checks the answer.
func (f *driftFixture) expect(t *testing.T, what string, mutate func(nc *awsv1.EC2NodeClass), want cloudprovider.DriftReason) {
	t.Helper()
	nc := ExpectExists(f.ctx, t, e.Client, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: f.nc.Name}})
	stored := nc.DeepCopy()
	mutate(nc)
	ExpectApplied(f.ctx, t, e.Client, nc)
	got, err := f.drift.IsDrifted(f.ctx, f.claim)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != want {
		t.Errorf("%s: drift %q, want %q", what, got, want)
	}
	// Back to the matching status for the next case.
	nc.Annotations, nc.Status = stored.Annotations, stored.Status
	ExpectApplied(f.ctx, t, e.Client, nc)
}

func arch(a string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}
}

func TestDriftNoneWhenEverythingMatches(t *testing.T) {
	f := setupDrift(t, false)
	f.expect(t, "matching", func(*awsv1.EC2NodeClass) {}, "")
}

func TestNodeClassDrift(t *testing.T) {
	f := setupDrift(t, false)
	before := f.aws.Calls("ec2", "DescribeInstances")
	f.expect(t, "class hash changed, same version", func(nc *awsv1.EC2NodeClass) {
		nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = "200"
	}, aws.NodeClassDrift)
	if f.aws.Calls("ec2", "DescribeInstances") != before {
		t.Error("static drift must be decided without describing the instance")
	}
	f.expect(t, "class hash changed with another version", func(nc *awsv1.EC2NodeClass) {
		nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = "200"
		nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v0"
	}, "")
	f.expect(t, "class without hash annotations", func(nc *awsv1.EC2NodeClass) {
		nc.Annotations = nil
	}, "")
}

func TestAMIDrift(t *testing.T) {
	f := setupDrift(t, false)
	std := f.nc.Status.AMIs[0]
	f.expect(t, "a newer AMI for the instance's requirements", func(nc *awsv1.EC2NodeClass) {
		newer := std
		newer.ID = f.otherAMI
		nc.Status.AMIs = []awsv1.AMI{newer, std}
	}, aws.AMIDrift)
	f.expect(t, "the instance's AMI is gone", func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs[0].ID = f.otherAMI
	}, aws.AMIDrift)
	f.expect(t, "newer AMIs for other architectures and for GPUs only", func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = []awsv1.AMI{
			{ID: f.otherAMI, Requirements: []corev1.NodeSelectorRequirement{arch("arm64")}},
			{ID: "ami-0000000000000gpu", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"), {Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}},
			std,
		}
	}, "")
}

// With the instance type provider, the instance type's own requirements
// (not only the claim's labels) choose the AMI variant.
func TestAMIDriftByInstanceTypeRequirements(t *testing.T) {
	f := setupDrift(t, true)
	std := f.nc.Status.AMIs[0]
	noAccel := std
	noAccel.Requirements = append(noAccel.Requirements, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist})
	f.expect(t, "standard AMI behind a neuron one", func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = []awsv1.AMI{
			{ID: f.otherAMI, Requirements: []corev1.NodeSelectorRequirement{arch("amd64"), {Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}},
			noAccel,
		}
	}, "")
	// The claim's labels do not name the family; the instance type does.
	f.expect(t, "an AMI for the m5 family", func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = []awsv1.AMI{{ID: f.inst.ImageID, Requirements: []corev1.NodeSelectorRequirement{arch("amd64"),
			{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}}}}
	}, "")
	f.expect(t, "an AMI that m5.large cannot boot", func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = []awsv1.AMI{{ID: f.inst.ImageID, Requirements: []corev1.NodeSelectorRequirement{arch("amd64"), {Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}}}
	}, aws.AMIDrift)
}

func TestSubnetDrift(t *testing.T) {
	f := setupDrift(t, false)
	f.expect(t, "the instance's subnet is no longer selected", func(nc *awsv1.EC2NodeClass) {
		nc.Status.Subnets = []awsv1.Subnet{{ID: f.subnets[1].ID, Zone: f.subnets[1].Zone, ZoneID: f.subnets[1].ZoneID}}
	}, aws.SubnetDrift)
	f.expect(t, "only the instance's subnet", func(nc *awsv1.EC2NodeClass) {
		nc.Status.Subnets = []awsv1.Subnet{{ID: f.subnets[0].ID, Zone: f.subnets[0].Zone, ZoneID: f.subnets[0].ZoneID}}
	}, "")
}

func TestSecurityGroupDrift(t *testing.T) {
	f := setupDrift(t, false)
	f.expect(t, "a group removed", func(nc *awsv1.EC2NodeClass) {
		nc.Status.SecurityGroups = nc.Status.SecurityGroups[:1]
	}, aws.SecurityGroupDrift)
	f.expect(t, "a group added", func(nc *awsv1.EC2NodeClass) {
		nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, awsv1.SecurityGroup{ID: "sg-0000000000000new"})
	}, aws.SecurityGroupDrift)
	f.expect(t, "same groups in another order", func(nc *awsv1.EC2NodeClass) {
		nc.Status.SecurityGroups[0], nc.Status.SecurityGroups[1] = nc.Status.SecurityGroups[1], nc.Status.SecurityGroups[0]
	}, "")
}

// The emulator launches no instance into a reservation, so the reservation
// check is exercised on InstanceDrift directly.
func TestCapacityReservationDrift(t *testing.T) {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "reserved"}}
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a"}}
	nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-1"}}
	nc.Status.AMIs = []awsv1.AMI{{ID: "ami-1", Requirements: []corev1.NodeSelectorRequirement{arch("amd64")}}}
	nc.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-1"}}
	reqs := scheduling.FromLabels(map[string]string{corev1.LabelArchStable: "amd64"})
	inst := &instance.Instance{ID: "i-1", ImageID: "ami-1", SubnetID: "subnet-1", SecurityGroupIDs: []string{"sg-1"}}
	for _, c := range []struct {
		reservation string
		want        cloudprovider.DriftReason
	}{{"", ""}, {"cr-1", ""}, {"cr-2", aws.CapacityReservationDrift}} {
		inst.CapacityReservationID = c.reservation
		got, err := aws.InstanceDrift(inst, reqs, nc)
		if err != nil || got != c.want {
			t.Errorf("reservation %q: drift %q (err %v), want %q", c.reservation, got, err, c.want)
		}
	}
}

// An unresolved status is an error naming what is missing, never drift;
// missing or deleted classes and claims of other providers drift nothing.
func TestDriftUndecidable(t *testing.T) {
	f := setupDrift(t, false)
	for field, mutate := range map[string]func(nc *awsv1.EC2NodeClass){
		"status.amis":           func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = nil },
		"status.subnets":        func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nil },
		"status.securityGroups": func(nc *awsv1.EC2NodeClass) { nc.Status.SecurityGroups = nil },
	} {
		nc := f.nc.DeepCopy()
		mutate(nc)
		reqs := scheduling.FromLabels(f.claim.Labels)
		inst := &instance.Instance{ID: f.inst.ID, ImageID: f.inst.ImageID, SubnetID: f.inst.SubnetID, SecurityGroupIDs: f.inst.SecurityGroupIDs}
		got, err := aws.InstanceDrift(inst, reqs, nc)
		if err == nil || !strings.Contains(err.Error(), field) || got != "" {
			t.Errorf("%s empty: drift %q err %v, want an error naming it", field, got, err)
		}
	}

	kwok := f.claim.DeepCopy()
	kwok.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	if got, err := f.drift.IsDrifted(f.ctx, kwok); got != "" || err != nil {
		t.Errorf("KWOK claim: %q %v", got, err)
	}
	// The instance terminated under the claim: an error, not drift.
	if err := f.aws.SetInstanceState(f.inst.ID, "terminated"); err != nil {
		t.Fatal(err)
	}
	if got, err := f.drift.IsDrifted(f.ctx, f.claim); got != "" || !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("terminated instance: %q %v, want a NodeClaimNotFoundError", got, err)
	}
	ExpectDeleted(f.ctx, t, e.Client, f.nc)
	if got, err := f.drift.IsDrifted(f.ctx, f.claim); got != "" || err != nil {
		t.Errorf("missing class: %q %v", got, err)
	}
	var nilDrift *aws.Drift
	if got, err := nilDrift.IsDrifted(f.ctx, f.claim); got != "" || err != nil {
		t.Errorf("nil Drift: %q %v", got, err)
	}
}
