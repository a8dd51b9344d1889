package awsemulator_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// templateWithTenancy copies the launch template name's image, security groups and
// instance profile into a new template whose Placement.Tenancy is tenancy.
func templateWithTenancy(t *testing.T, c *clients, from, name string, tenancy ec2types.Tenancy) {
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
			Placement:          &ec2types.LaunchTemplatePlacementRequest{Tenancy: tenancy},
		},
	})
	ok(t, err)
}

func launchedTenancy(t *testing.T, c *clients, out *ec2.CreateFleetOutput) ec2types.Tenancy {
	t.Helper()
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("fleet launched %+v (errors %+v)", out.Instances, out.Errors)
	}
	d, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
	ok(t, err)
	return d.Reservations[0].Instances[0].Placement.Tenancy
}

// Placement.Tenancy comes from the fleet's override, else the launch template, else
// is default; DescribeInstances reports it and filters on it.
func TestTenancyFromLaunchTemplateAndOverrides(t *testing.T) {
	c := start(t)
	shared, subnets := launchWorld(t, c, "x86_64")
	templateWithTenancy(t, c, shared, "karpenter.k8s.aws/dedicated", ec2types.TenancyDedicated)
	if lts := c.e.LaunchTemplates(); len(lts) != 2 {
		t.Fatalf("%d templates", len(lts))
	}

	out, err := c.ec2.CreateFleet(ctx, fleetInput(shared, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDefault {
		t.Errorf("template without tenancy launched %q, want default", got)
	}
	out, err = c.ec2.CreateFleet(ctx, fleetInput("karpenter.k8s.aws/dedicated", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	dedicatedID := out.Instances[0].InstanceIds[0]
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDedicated {
		t.Errorf("dedicated template launched %q, want dedicated", got)
	}
	in := fleetInput(shared, ec2types.DefaultTargetCapacityTypeSpot, 1, []string{"m5.large"}, subnets)
	for i := range in.LaunchTemplateConfigs[0].Overrides {
		in.LaunchTemplateConfigs[0].Overrides[i].Placement = &ec2types.Placement{Tenancy: ec2types.TenancyDedicated}
	}
	out, err = c.ec2.CreateFleet(ctx, in)
	ok(t, err)
	overriddenID := out.Instances[0].InstanceIds[0]
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDedicated {
		t.Errorf("override Placement.Tenancy dedicated launched %q", got)
	}

	d, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("tenancy", "dedicated")}})
	ok(t, err)
	var ids []string
	for _, r := range d.Reservations {
		for _, i := range r.Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
	}
	if len(ids) != 2 || !(ids[0] == dedicatedID && ids[1] == overriddenID || ids[1] == dedicatedID && ids[0] == overriddenID) {
		t.Errorf("tenancy=dedicated filter found %v, want %s and %s", ids, dedicatedID, overriddenID)
	}
	for _, i := range c.e.Instances() {
		if want := map[bool]string{true: "dedicated", false: "default"}[i.ID == dedicatedID || i.ID == overriddenID]; i.Tenancy != want {
			t.Errorf("Instances(): %s tenancy %q, want %q", i.ID, i.Tenancy, want)
		}
	}
}

// EC2's refusals: a tenancy it does not know is an invalid parameter (dry runs
// included), tenancy host finds no Dedicated Host, and types set unsupported for
// dedicated tenancy fail their pools with Unsupported while others launch.
func TestTenancyRefusals(t *testing.T) {
	c := start(t)
	shared, subnets := launchWorld(t, c, "x86_64")

	for _, dry := range []bool{false, true} {
		_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(dry), LaunchTemplateName: aws.String("karpenter.k8s.aws/bogus"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"), Placement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: "shared"}}})
		expectError(t, err, "InvalidParameterValue", 400)
		_, err = c.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(dry), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ImageId: aws.String("ami-1"),
			Placement: &ec2types.Placement{Tenancy: "shared"}})
		expectError(t, err, "InvalidParameterValue", 400)
		in := fleetInput(shared, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets)
		in.DryRun = aws.Bool(dry)
		in.LaunchTemplateConfigs[0].Overrides[0].Placement = &ec2types.Placement{Tenancy: "shared"}
		_, err = c.ec2.CreateFleet(ctx, in)
		expectError(t, err, "InvalidParameterValue", 400)
	}
	_, err := c.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ImageId: aws.String("ami-1"),
		Placement: &ec2types.Placement{Tenancy: ec2types.TenancyDedicated}})
	expectError(t, err, "DryRunOperation", 412)

	templateWithTenancy(t, c, shared, "karpenter.k8s.aws/host", ec2types.TenancyHost)
	out, err := c.ec2.CreateFleet(ctx, fleetInput("karpenter.k8s.aws/host", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if len(out.Instances) != 0 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientHostCapacity" {
		t.Errorf("tenancy host: instances %+v errors %+v, want no instance and InsufficientHostCapacity", out.Instances, out.Errors)
	}

	c.e.SetTenancyUnsupported("m5.large", "dedicated", true)
	templateWithTenancy(t, c, shared, "karpenter.k8s.aws/dedicated", ec2types.TenancyDedicated)
	out, err = c.ec2.CreateFleet(ctx, fleetInput("karpenter.k8s.aws/dedicated", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large", "m5.xlarge"}, subnets))
	ok(t, err)
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDedicated || out.Instances[0].InstanceType != "m5.xlarge" {
		t.Errorf("launched %s %s, want m5.xlarge dedicated", out.Instances[0].InstanceType, got)
	}
	unsupported := 0
	for _, e := range out.Errors {
		if aws.ToString(e.ErrorCode) == "Unsupported" && e.LaunchTemplateAndOverrides.Overrides.InstanceType == "m5.large" {
			unsupported++
		}
	}
	if unsupported == 0 {
		t.Errorf("no Unsupported error for m5.large dedicated: %+v", out.Errors)
	}
	// Shared tenancy of the same type still launches.
	out, err = c.ec2.CreateFleet(ctx, fleetInput(shared, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDefault {
		t.Errorf("shared m5.large launched %q", got)
	}
	c.e.SetTenancyUnsupported("m5.large", "dedicated", false)
	out, err = c.ec2.CreateFleet(ctx, fleetInput("karpenter.k8s.aws/dedicated", ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDedicated {
		t.Errorf("m5.large dedicated after clearing: %q", got)
	}
}

// The shipped controller policy allows dedicated launches (the validation's dry
// runs and real ones); a policy that denies ec2:Tenancy dedicated refuses them
// while shared launches go on.
func TestShippedPolicyAllowsDedicatedTenancy(t *testing.T) {
	c := start(t)
	enforceShippedPolicy(t, c)
	lt, subnets := karpenterWorld(t, c, karpenterTags)
	dedicated := func(dry bool) *ec2.CreateFleetInput {
		in := karpenterFleet(lt, subnets, karpenterTags)
		in.DryRun = aws.Bool(dry)
		for i := range in.LaunchTemplateConfigs[0].Overrides {
			in.LaunchTemplateConfigs[0].Overrides[i].Placement = &ec2types.Placement{Tenancy: ec2types.TenancyDedicated}
		}
		return in
	}
	_, err := c.ec2.CreateFleet(ctx, dedicated(true))
	expectError(t, err, "DryRunOperation", 412)
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("karpenter.k8s.aws/validation"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"), Placement: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDedicated}},
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2TagList(karpenterTags...)}}})
	expectError(t, err, "DryRunOperation", 412)
	out, err := c.ec2.CreateFleet(ctx, dedicated(false))
	ok(t, err)
	if got := launchedTenancy(t, c, out); got != ec2types.TenancyDedicated {
		t.Errorf("launched %q, want dedicated", got)
	}
	expectNoDenials(t, c.e)

	// Deny dedicated instances.
	var p map[string]any
	ok(t, json.Unmarshal([]byte(shippedPolicy(t, c.e)), &p))
	p["Statement"] = append(p["Statement"].([]any), map[string]any{
		"Sid": "NoDedicated", "Effect": "Deny", "Action": "ec2:RunInstances", "Resource": "arn:aws:ec2:*:*:instance/*",
		"Condition": map[string]any{"StringEquals": map[string]any{"ec2:Tenancy": "dedicated"}},
	})
	doc, err := json.Marshal(p)
	ok(t, err)
	ok(t, c.e.SetPolicy(string(doc)))
	_, err = c.ec2.CreateFleet(ctx, dedicated(true))
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:RunInstances", "arn:aws:ec2:us-west-2:123456789012:instance/*")
	dry := karpenterFleet(lt, subnets, karpenterTags)
	dry.DryRun = aws.Bool(true)
	_, err = c.ec2.CreateFleet(ctx, dry)
	expectError(t, err, "DryRunOperation", 412)
}
