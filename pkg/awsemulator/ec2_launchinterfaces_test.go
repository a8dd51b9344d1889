package awsemulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A launch template's network interfaces go to the instances a fleet
// launches from it (DescribeInstances lists them with their card, device
// index and type); EC2 refuses an EFA interface on a type without EFA and a
// network card or device index the type does not have, per pool.
func TestFleetLaunchesTemplateNetworkInterfaces(t *testing.T) {
	c := start(t)
	_, subnets := launchWorld(t, c, "x86_64")
	subnets = subnets[:1]
	sgs, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	sg := *sgs.SecurityGroups[0].GroupId
	ami, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("architecture", "x86_64"), filter("name", "amazon-eks-node-al2023-x86_64-standard-1.34-*")}})
	ok(t, err)
	if len(ami.Images) == 0 {
		t.Fatal("no AL2023 image")
	}
	template := func(name string, nis ...ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) string {
		_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: ami.Images[0].ImageId, NetworkInterfaces: nis},
		})
		ok(t, err)
		return name
	}
	ni := func(card, device int32, typ string) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		return ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(card), DeviceIndex: aws.Int32(device), InterfaceType: aws.String(typ), Groups: []string{sg},
		}
	}
	refused := func(lt, instanceType, code string) {
		t.Helper()
		out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{instanceType}, subnets))
		ok(t, err)
		if len(out.Instances) != 0 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != code {
			t.Errorf("%s on %s: instances %d, errors %+v, want %s", lt, instanceType, len(out.Instances), out.Errors, code)
		}
	}

	efa := template("efa", ni(0, 0, "interface"), ni(1, 0, "efa-only"))
	refused(efa, "m5.large", "InvalidParameterCombination")                                                            // no EFA
	refused(efa, "c5n.18xlarge", "InvalidParameterValue")                                                              // EFA, one network card
	refused(template("two-efa", ni(0, 0, "efa"), ni(0, 1, "efa-only")), "c5n.18xlarge", "InvalidParameterCombination") // one EFA interface at most
	refused(template("deep", ni(0, 0, "interface"), ni(0, 3, "interface")), "m5.large", "InvalidParameterValue")       // three interfaces

	out, err := c.ec2.CreateFleet(ctx, fleetInput(efa, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"c6in.32xlarge"}, subnets))
	ok(t, err)
	if len(out.Instances) != 1 {
		t.Fatalf("c6in.32xlarge with the EFA template: errors %+v", out.Errors)
	}
	desc, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
	ok(t, err)
	in := desc.Reservations[0].Instances[0]
	if len(in.NetworkInterfaces) != 2 {
		t.Fatalf("instance interfaces %+v, want 2", in.NetworkInterfaces)
	}
	for i, want := range []struct {
		card, device int32
		typ          string
	}{{0, 0, "interface"}, {1, 0, "efa-only"}} {
		got := in.NetworkInterfaces[i]
		if aws.ToString(got.InterfaceType) != want.typ || aws.ToInt32(got.Attachment.NetworkCardIndex) != want.card || aws.ToInt32(got.Attachment.DeviceIndex) != want.device ||
			aws.ToString(got.SubnetId) != aws.ToString(in.SubnetId) || len(got.Groups) != 1 || aws.ToString(got.Groups[0].GroupId) != sg {
			t.Errorf("interface %d: %s card %d device %d subnet %s groups %v, want %+v", i, aws.ToString(got.InterfaceType), aws.ToInt32(got.Attachment.NetworkCardIndex),
				aws.ToInt32(got.Attachment.DeviceIndex), aws.ToString(got.SubnetId), got.Groups, want)
		}
	}
	if len(in.SecurityGroups) != 1 || aws.ToString(in.SecurityGroups[0].GroupId) != sg {
		t.Errorf("instance security groups %v, want the interfaces' %s", in.SecurityGroups, sg)
	}
}
