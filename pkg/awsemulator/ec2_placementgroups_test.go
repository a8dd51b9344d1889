package awsemulator_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// CreatePlacementGroup makes groups that DescribePlacementGroups reads back
// by name, by id and by filter, in EC2's shapes; unknown names and ids and
// bad parameters are refused with EC2's codes.
func TestDescribeAndCreatePlacementGroups(t *testing.T) {
	c := start(t)
	out, err := c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("ml"), Strategy: ec2types.PlacementStrategyCluster,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypePlacementGroup, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}}})
	ok(t, err)
	cluster := out.PlacementGroup
	if !strings.HasPrefix(aws.ToString(cluster.GroupId), "pg-") || cluster.State != ec2types.PlacementGroupStateAvailable || cluster.Strategy != ec2types.PlacementStrategyCluster {
		t.Fatalf("created %+v", cluster)
	}
	_, err = c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("racks"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)})
	ok(t, err)
	_, err = c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("apart"), Strategy: ec2types.PlacementStrategySpread})
	ok(t, err)

	all, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{})
	ok(t, err)
	if len(all.PlacementGroups) != 3 {
		t.Fatalf("all: %+v", all.PlacementGroups)
	}
	byName, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"racks"}})
	ok(t, err)
	if len(byName.PlacementGroups) != 1 || aws.ToInt32(byName.PlacementGroups[0].PartitionCount) != 3 || byName.PlacementGroups[0].Strategy != ec2types.PlacementStrategyPartition {
		t.Errorf("by name: %+v", byName.PlacementGroups)
	}
	byID, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{aws.ToString(cluster.GroupId)}})
	ok(t, err)
	if len(byID.PlacementGroups) != 1 || aws.ToString(byID.PlacementGroups[0].GroupName) != "ml" || len(byID.PlacementGroups[0].Tags) != 1 ||
		!strings.HasSuffix(aws.ToString(byID.PlacementGroups[0].GroupArn), ":placement-group/ml") {
		t.Errorf("by id: %+v", byID.PlacementGroups)
	}
	spread, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{filter("strategy", "spread"), filter("state", "available")}})
	ok(t, err)
	if len(spread.PlacementGroups) != 1 || spread.PlacementGroups[0].SpreadLevel != ec2types.SpreadLevelRack {
		t.Errorf("spread filter: %+v", spread.PlacementGroups)
	}
	c.e.SetPlacementGroupState("apart", "deleting")
	avail, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"apart"}, Filters: []ec2types.Filter{filter("state", "available")}})
	ok(t, err)
	if len(avail.PlacementGroups) != 0 {
		t.Errorf("a deleting group matched state=available: %+v", avail.PlacementGroups)
	}

	_, err = c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}})
	expectError(t, err, "InvalidPlacementGroup.Unknown", 400)
	_, err = c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-0123456789abcdef0"}})
	expectError(t, err, "InvalidPlacementGroupId.NotFound", 400)
	_, err = c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{"ml"}})
	expectError(t, err, "InvalidPlacementGroupId.Malformed", 400)
	_, err = c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{filter("bogus", "x")}})
	expectError(t, err, "InvalidParameterValue", 400)
	_, err = c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("ml"), Strategy: ec2types.PlacementStrategyCluster})
	expectError(t, err, "InvalidPlacementGroup.Duplicate", 400)
	_, err = c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("x"), Strategy: ec2types.PlacementStrategyCluster, PartitionCount: aws.Int32(2)})
	expectError(t, err, "InvalidParameterCombination", 400)
	_, err = c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("x"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(8)})
	expectError(t, err, "InvalidParameterValue", 400)
}

// templateInGroup is a copy of the launch template from whose Placement
// names a placement group (and a partition when partition > 0).
func templateInGroup(t *testing.T, c *clients, from, name string, placement *ec2types.LaunchTemplatePlacementRequest) {
	t.Helper()
	var src awsemulator.LaunchTemplate
	for _, lt := range c.e.LaunchTemplates() {
		if lt.Name == from {
			src = lt
		}
	}
	profile, _ := src.InstanceProfile()
	_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(src.ImageID()),
			SecurityGroupIds:   src.SecurityGroupIDs(),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)},
			Placement:          placement,
		},
	})
	ok(t, err)
}

func subnetIn(subnets []ec2types.Subnet, zone string) []ec2types.Subnet {
	for _, s := range subnets {
		if aws.ToString(s.AvailabilityZone) == zone {
			return []ec2types.Subnet{s}
		}
	}
	return nil
}

// Instances launched through a template with a placement group carry the
// group (and partition) in DescribeInstances; a cluster group stays in its
// zone; partition numbers beyond the group's count, partitions of other
// strategies and unknown groups are refused with EC2's codes.
func TestLaunchIntoPlacementGroups(t *testing.T) {
	c := start(t)
	base, subnets := launchWorld(t, c, "x86_64")
	cluster := c.e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	c.e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "racks", Strategy: "partition", PartitionCount: 3})
	templateInGroup(t, c, base, "lt-cluster", &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(cluster.ID)})
	templateInGroup(t, c, base, "lt-p2", &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("racks"), PartitionNumber: aws.Int32(2)})
	templateInGroup(t, c, base, "lt-partition", &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("racks")})
	templateInGroup(t, c, base, "lt-p9", &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("racks"), PartitionNumber: aws.Int32(9)})
	templateInGroup(t, c, base, "lt-cluster-part", &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("ml"), PartitionNumber: aws.Int32(1)})
	templateInGroup(t, c, base, "lt-unknown", &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("nope")})

	placement := func(out *ec2.CreateFleetOutput) *ec2types.Placement {
		t.Helper()
		if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
			t.Fatalf("fleet launched %+v (errors %+v)", out.Instances, out.Errors)
		}
		d, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
		ok(t, err)
		return d.Reservations[0].Instances[0].Placement
	}
	refused := func(out *ec2.CreateFleetOutput, code string) {
		t.Helper()
		if len(out.Instances) != 0 || len(out.Errors) == 0 {
			t.Fatalf("fleet launched %+v, want %s", out.Instances, code)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.ErrorCode) != code {
				t.Errorf("error %s: %s, want %s", aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage), code)
			}
		}
	}

	first := subnetIn(subnets, "us-west-2a")
	out, err := c.ec2.CreateFleet(ctx, fleetInput("lt-cluster", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, first))
	ok(t, err)
	if p := placement(out); aws.ToString(p.GroupId) != cluster.ID || aws.ToString(p.GroupName) != "ml" || aws.ToString(p.AvailabilityZone) != "us-west-2a" {
		t.Errorf("cluster launch placement %+v", p)
	}
	// The group now lives in us-west-2a: another zone is refused, the same zone is not.
	out, err = c.ec2.CreateFleet(ctx, fleetInput("lt-cluster", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnetIn(subnets, "us-west-2b")))
	ok(t, err)
	refused(out, "InsufficientInstanceCapacity")
	out, err = c.ec2.CreateFleet(ctx, fleetInput("lt-cluster", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if p := placement(out); aws.ToString(p.AvailabilityZone) != "us-west-2a" {
		t.Errorf("a fleet over every zone launched the cluster group's instance in %s", aws.ToString(p.AvailabilityZone))
	}

	out, err = c.ec2.CreateFleet(ctx, fleetInput("lt-p2", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if p := placement(out); aws.ToInt32(p.PartitionNumber) != 2 || aws.ToString(p.GroupName) != "racks" {
		t.Errorf("partition 2 launch placement %+v", p)
	}
	out, err = c.ec2.CreateFleet(ctx, fleetInput("lt-partition", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if p := placement(out); aws.ToInt32(p.PartitionNumber) != 1 {
		t.Errorf("an unpinned launch went to partition %d, want the emptiest (1)", aws.ToInt32(p.PartitionNumber))
	}
	d, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("placement-group-name", "racks")}})
	ok(t, err)
	if n := len(d.Reservations); n != 2 {
		t.Errorf("%d reservations in group racks, want 2", n)
	}
	d, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("placement-group-name", "racks"), filter("placement-partition-number", "2")}})
	ok(t, err)
	if n := len(d.Reservations); n != 1 {
		t.Errorf("%d reservations in partition 2 of racks, want 1", n)
	}

	for lt, code := range map[string]string{"lt-p9": "InvalidParameterValue", "lt-cluster-part": "InvalidParameterCombination", "lt-unknown": "InvalidPlacementGroup.Unknown"} {
		out, err = c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, first))
		ok(t, err)
		refused(out, code)
	}
}

// Under the shipped controller policy, DescribePlacementGroups is allowed
// and a fleet launches into a placement group (ec2:CreateFleet and
// ec2:RunInstances on placement-group/<name>); a policy without the
// placement-group resource is refused on it.
func TestShippedPolicyAllowsPlacementGroupLaunches(t *testing.T) {
	c := start(t)
	pg := c.e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	policy := shippedPolicy(t, c.e)
	ok(t, c.e.SetPolicy(policy))
	_, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"ml"}})
	ok(t, err)
	base, subnets := karpenterWorld(t, c, karpenterTags)
	var src awsemulator.LaunchTemplate
	for _, lt := range c.e.LaunchTemplates() {
		if lt.Name == base {
			src = lt
		}
	}
	profile, _ := src.InstanceProfile()
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/in-group"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(src.ImageID()),
			SecurityGroupIds:   src.SecurityGroupIDs(),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)},
			Placement:          &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg.ID)},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2TagList(karpenterTags...)}},
	})
	ok(t, err)
	out, err := c.ec2.CreateFleet(ctx, karpenterFleet("karpenter.k8s.aws/in-group", subnets, karpenterTags))
	ok(t, err)
	if len(out.Instances) != 1 {
		t.Fatalf("fleet launched %+v (errors %+v)", out.Instances, out.Errors)
	}
	expectNoDenials(t, c.e)

	narrowed := strings.Replace(policy, `,
        "arn:aws:ec2:us-west-2:*:placement-group/*"`, "", 1)
	if narrowed == policy {
		t.Fatal("the shipped policy has no placement-group resource to remove")
	}
	ok(t, c.e.SetPolicy(narrowed))
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet("karpenter.k8s.aws/in-group", subnets, karpenterTags))
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateFleet", "arn:aws:ec2:us-west-2:123456789012:placement-group/ml")
}
