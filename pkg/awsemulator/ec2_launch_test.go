package awsemulator_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// launchWorld creates what Karpenter creates before launching: an instance profile
// with the node role and a launch template on the latest AL2023 x86_64 AMI.
func launchWorld(t *testing.T, c *clients, arch string) (lt string, subnets []ec2types.Subnet) {
	t.Helper()
	_, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("karpenter-profile-" + arch)})
	ok(t, err)
	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("karpenter-profile-" + arch), RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	ami, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/" + arch + "/standard/recommended/image_id")})
	ok(t, err)
	sgs, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	name := "karpenter.k8s.aws/" + arch
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            ami.Parameter.Value,
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho node"))),
			SecurityGroupIds:   []string{*sgs.SecurityGroups[0].GroupId},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("karpenter-profile-" + arch)},
			MetadataOptions:    &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1)},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}}}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("karpenter-demo")}}}},
	})
	ok(t, err)
	sn, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	return name, sn.Subnets
}

func fleetInput(lt string, capacityType ec2types.DefaultTargetCapacityType, total int32, types []string, subnets []ec2types.Subnet) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range types {
		for _, s := range subnets {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: s.SubnetId, AvailabilityZone: s.AvailabilityZone})
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(total), DefaultTargetCapacityType: capacityType},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
			{Key: aws.String("kubernetes.io/cluster/karpenter-demo"), Value: aws.String("owned")},
		}}},
	}
	if capacityType == ec2types.DefaultTargetCapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

// cheapestSpot is the lowest spot price among the types and the subnets' zones.
func cheapestSpot(t *testing.T, c *clients, types []string, subnets []ec2types.Subnet, skip map[string]bool) (string, string) {
	var bestType, bestZone string
	best := 1e9
	for _, it := range types {
		out, err := c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{ec2types.InstanceType(it)}, ProductDescriptions: []string{"Linux/UNIX"}})
		ok(t, err)
		for _, sp := range out.SpotPriceHistory {
			p, _ := strconv.ParseFloat(*sp.SpotPrice, 64)
			key := it + "/" + *sp.AvailabilityZone
			if p < best && !skip[key] {
				best, bestType, bestZone = p, it, *sp.AvailabilityZone
			}
		}
	}
	return bestType, bestZone
}

func TestCreateFleetSpotPicksCheapestPoolAndFallsBackOnICE(t *testing.T) {
	c := start(t)
	lt, subnets := launchWorld(t, c, "x86_64")
	types := []string{"m5.large", "c5.large", "m5.xlarge", "t3.large"}
	wantType, wantZone := cheapestSpot(t, c, types, subnets, nil)

	out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeSpot, 1, types, subnets))
	ok(t, err)
	if len(out.Errors) != 0 || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("fleet: errors %+v instances %+v", out.Errors, out.Instances)
	}
	got := out.Instances[0]
	if string(got.InstanceType) != wantType || *got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone != wantZone || got.Lifecycle != ec2types.InstanceLifecycleSpot {
		t.Fatalf("launched %s in %s, cheapest spot pool is %s in %s", got.InstanceType, *got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone, wantType, wantZone)
	}

	// The cheapest pool runs out of capacity: EC2 reports it and launches in the next one.
	c.e.SetInsufficientCapacity("spot", wantType, wantZone, true)
	nextType, nextZone := cheapestSpot(t, c, types, subnets, map[string]bool{wantType + "/" + wantZone: true})
	out, err = c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeSpot, 1, types, subnets))
	ok(t, err)
	if len(out.Errors) != 1 || *out.Errors[0].ErrorCode != "InsufficientInstanceCapacity" ||
		string(out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType) != wantType || *out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone != wantZone {
		t.Fatalf("ICE errors %+v", out.Errors)
	}
	if len(out.Instances) != 1 || string(out.Instances[0].InstanceType) != nextType || *out.Instances[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone != nextZone {
		t.Fatalf("fallback launched %+v, want %s in %s", out.Instances, nextType, nextZone)
	}
	// On-demand is a different pool: not affected by the spot ICE mark.
	od, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 2, []string{"m5.large", "t3.medium"}, subnets[:1]))
	ok(t, err)
	if len(od.Instances) != 1 || od.Instances[0].InstanceType != "t3.medium" || len(od.Instances[0].InstanceIds) != 2 || od.Instances[0].Lifecycle != ec2types.InstanceLifecycleOnDemand {
		t.Fatalf("on-demand lowest-price: %+v", od.Instances)
	}
	// Every pool out of capacity: no instance, one error per pool.
	for _, s := range subnets {
		c.e.SetInsufficientCapacity("on-demand", "m5.large", *s.AvailabilityZone, true)
	}
	none, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if len(none.Instances) != 0 || len(none.Errors) != len(subnets) {
		t.Fatalf("all pools ICE: %d instances, %d errors", len(none.Instances), len(none.Errors))
	}
}

func TestInstancesLifecycle(t *testing.T) {
	c := start(t)
	lt, subnets := launchWorld(t, c, "x86_64")
	out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 3, []string{"m5.large"}, subnets[:1]))
	ok(t, err)
	ids := out.Instances[0].InstanceIds
	if len(ids) != 3 {
		t.Fatalf("launched %v", ids)
	}
	sn, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{*subnets[0].SubnetId}})
	ok(t, err)
	if *sn.Subnets[0].AvailableIpAddressCount != 8187-3 {
		t.Fatalf("free IPs after 3 launches: %d", *sn.Subnets[0].AvailableIpAddressCount)
	}

	desc, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	ok(t, err)
	if len(desc.Reservations) != 1 || len(desc.Reservations[0].Instances) != 3 {
		t.Fatalf("reservations %+v", desc.Reservations)
	}
	in := desc.Reservations[0].Instances[0]
	if in.State.Name != ec2types.InstanceStateNameRunning || *in.State.Code != 16 || in.InstanceType != "m5.large" ||
		*in.SubnetId != *subnets[0].SubnetId || *in.Placement.AvailabilityZone != *subnets[0].AvailabilityZone ||
		*in.PrivateDnsName == "" || *in.PrivateIpAddress == "" || in.IamInstanceProfile == nil || len(in.SecurityGroups) != 1 ||
		!hasTag(in.Tags, "karpenter.sh/nodepool", "default") || !hasTag(in.Tags, "karpenter.k8s.aws/ec2nodeclass", "default") ||
		in.MetadataOptions.HttpTokens != ec2types.HttpTokensStateRequired || *in.MetadataOptions.HttpPutResponseHopLimit != 1 {
		t.Fatalf("instance %+v", in)
	}
	if got := c.e.Instances(); len(got) != 3 || got[0].UserData == "" || got[0].LaunchTemplateName != lt {
		t.Fatalf("Instances(): %+v", got)
	}

	// Karpenter's List query: its tag, live states.
	listed, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		filter("tag-key", "karpenter.sh/nodepool"), filter("tag:kubernetes.io/cluster/karpenter-demo", "owned"),
		filter("instance-state-name", "pending", "running", "stopping", "stopped", "shutting-down"),
	}})
	ok(t, err)
	if len(listed.Reservations[0].Instances) != 3 {
		t.Fatalf("listed %d", len(listed.Reservations[0].Instances))
	}

	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{ids[0]}, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abc")}}})
	ok(t, err)
	tagged, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/nodeclaim", "default-abc")}})
	ok(t, err)
	if len(tagged.Reservations) != 1 || *tagged.Reservations[0].Instances[0].InstanceId != ids[0] {
		t.Fatalf("tagged %+v", tagged.Reservations)
	}
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-00000000000000000"}, Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}})
	expectError(t, err, "InvalidInstanceID.NotFound", 400)
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{ids[0]}, Tags: []ec2types.Tag{{Key: aws.String("aws:x"), Value: aws.String("b")}}})
	expectError(t, err, "InvalidParameterValue", 400)

	term, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:2]})
	ok(t, err)
	if len(term.TerminatingInstances) != 2 || term.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown ||
		term.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameRunning {
		t.Fatalf("terminate %+v", term.TerminatingInstances)
	}
	after, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "terminated")}})
	ok(t, err)
	if len(after.Reservations) != 1 || len(after.Reservations[0].Instances) != 2 {
		t.Fatalf("terminated: %+v", after.Reservations)
	}
	sn, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{*subnets[0].SubnetId}})
	ok(t, err)
	if *sn.Subnets[0].AvailableIpAddressCount != 8187-1 {
		t.Fatalf("free IPs after terminating 2: %d", *sn.Subnets[0].AvailableIpAddressCount)
	}
	_, err = c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-00000000000000000"}})
	expectError(t, err, "InvalidInstanceID.NotFound", 400)
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000000"}})
	expectError(t, err, "InvalidInstanceID.NotFound", 400)

	ok(t, c.e.SetInstanceState(ids[2], "stopped"))
	stopped, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids[2:]})
	ok(t, err)
	if stopped.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNameStopped {
		t.Fatalf("SetInstanceState: %s", stopped.Reservations[0].Instances[0].State.Name)
	}
}

func TestCreateFleetRejections(t *testing.T) {
	c := start(t)
	lt, subnets := launchWorld(t, c, "x86_64")

	// An arm64 type with an x86_64 AMI.
	out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m6g.large"}, subnets[:1]))
	ok(t, err)
	if len(out.Instances) != 0 || len(out.Errors) != 1 || *out.Errors[0].ErrorCode != "InvalidParameterValue" {
		t.Fatalf("arch mismatch: %+v", out.Errors)
	}
	// A subnet with one free address: one instance, then InsufficientFreeAddressesInSubnet.
	tiny := c.e.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 1})
	tinySubnet := []ec2types.Subnet{{SubnetId: aws.String(tiny.ID), AvailabilityZone: aws.String(tiny.Zone)}}
	out, err = c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, tinySubnet))
	ok(t, err)
	if len(out.Instances) != 1 {
		t.Fatalf("first launch in the tiny subnet: %+v", out.Errors)
	}
	out, err = c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, tinySubnet))
	ok(t, err)
	if len(out.Instances) != 0 || *out.Errors[0].ErrorCode != "InsufficientFreeAddressesInSubnet" {
		t.Fatalf("exhausted subnet: %+v", out.Errors)
	}
	// A missing launch template fails the call.
	_, err = c.ec2.CreateFleet(ctx, fleetInput("karpenter.k8s.aws/missing", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	expectError(t, err, "InvalidLaunchTemplateName.NotFoundException", 400)
	// A profile that went away: every pool reports it.
	_, err = c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("karpenter-profile-x86_64"), RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("karpenter-profile-x86_64")})
	ok(t, err)
	out, err = c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets[:2]))
	ok(t, err)
	if len(out.Instances) != 0 || len(out.Errors) != 2 || *out.Errors[0].ErrorCode != "InvalidParameterValue" {
		t.Fatalf("missing profile: %+v", out.Errors)
	}
}

func TestLaunchTemplates(t *testing.T) {
	c := start(t)
	lt, _ := launchWorld(t, c, "arm64")
	_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(lt), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}})
	expectError(t, err, "InvalidLaunchTemplateName.AlreadyExistsException", 400)

	byName, err := c.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{lt}})
	ok(t, err)
	if len(byName.LaunchTemplates) != 1 || *byName.LaunchTemplates[0].LatestVersionNumber != 1 || !hasTag(byName.LaunchTemplates[0].Tags, "karpenter.k8s.aws/cluster", "karpenter-demo") {
		t.Fatalf("by name: %+v", byName.LaunchTemplates)
	}
	byTag, err := c.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{filter("tag:karpenter.k8s.aws/cluster", "karpenter-demo")}})
	ok(t, err)
	if len(byTag.LaunchTemplates) != 1 {
		t.Fatalf("by tag: %d", len(byTag.LaunchTemplates))
	}
	stored := c.e.LaunchTemplates()
	if len(stored) != 1 || stored[0].ImageID() == "" || len(stored[0].SecurityGroupIDs()) != 1 || stored[0].TagsFor("instance")["karpenter.k8s.aws/ec2nodeclass"] != "default" {
		t.Fatalf("LaunchTemplates(): %+v", stored)
	}
	user, err := base64.StdEncoding.DecodeString(stored[0].UserData())
	ok(t, err)
	if string(user) != "#!/bin/bash\necho node" {
		t.Fatalf("user data %q", user)
	}
	_, err = c.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(lt)})
	ok(t, err)
	_, err = c.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{lt}})
	expectError(t, err, "InvalidLaunchTemplateName.NotFoundException", 400)
	_, err = c.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(lt)})
	expectError(t, err, "InvalidLaunchTemplateName.NotFoundException", 400)
}

// POST /_emulator/subnet-addresses empties one subnet: fleet pools in it
// fail with InsufficientFreeAddressesInSubnet naming it, the fleet launches
// in the other subnet, and DescribeSubnets reports 0 free addresses.
func TestSubnetAddressesHook(t *testing.T) {
	c := start(t)
	lt, subnets := launchWorld(t, c, "x86_64")
	// The pool EC2 tries first (same price: the first zone) is in the full subnet.
	first := subnets[0]
	if aws.ToString(subnets[1].AvailabilityZone) < aws.ToString(first.AvailabilityZone) {
		first = subnets[1]
	}
	full := aws.ToString(first.SubnetId)
	resp, err := http.Post(c.e.Endpoint()+"/_emulator/subnet-addresses", "application/json",
		strings.NewReader(`{"subnetId":"`+full+`","availableIps":0}`))
	ok(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("hook answered %d", resp.StatusCode)
	}
	out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets[:2]))
	ok(t, err)
	if len(out.Instances) != 1 || aws.ToString(out.Instances[0].LaunchTemplateAndOverrides.Overrides.SubnetId) == full {
		t.Fatalf("instances %+v", out.Instances)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientFreeAddressesInSubnet" ||
		aws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.SubnetId) != full {
		t.Fatalf("errors %+v", out.Errors)
	}
	got, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{full}})
	ok(t, err)
	if aws.ToInt32(got.Subnets[0].AvailableIpAddressCount) != 0 {
		t.Fatalf("free addresses %d", aws.ToInt32(got.Subnets[0].AvailableIpAddressCount))
	}
	if err := c.e.SetSubnetAvailableIPs("subnet-missing", 1); err == nil {
		t.Fatal("set addresses of a missing subnet")
	}
}
