package awsemulator_test

import (
	"net"
	"strings"
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
	template := interfaceTemplates(t, c)
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

// IPv6 settings of a template's interfaces reach the instance: each
// interface gets the IPv6 addresses and prefixes it asks for, the first
// address flagged primary when PrimaryIpv6 is set (DescribeInstances, and
// the emulator's record of the instance). EC2 refuses IP settings on an
// efa-only interface and a primary IPv6 address without an IPv6 address.
func TestFleetLaunchesIPv6Interfaces(t *testing.T) {
	c := start(t)
	_, subnets := launchWorld(t, c, "x86_64")
	subnets = subnets[:1]
	template := interfaceTemplates(t, c)
	ipv6 := func(card, device int32, typ string, prefixes int32) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		ni := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(card), DeviceIndex: aws.Int32(device), InterfaceType: aws.String(typ),
			PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1),
		}
		if prefixes > 0 {
			ni.Ipv6PrefixCount = aws.Int32(prefixes)
		}
		return ni
	}
	refused := func(lt, instanceType, code, message string) {
		t.Helper()
		out, err := c.ec2.CreateFleet(ctx, fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{instanceType}, subnets))
		ok(t, err)
		if len(out.Instances) != 0 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != code || !strings.Contains(aws.ToString(out.Errors[0].ErrorMessage), message) {
			t.Errorf("%s on %s: instances %d, errors %+v, want %s saying %q", lt, instanceType, len(out.Instances), out.Errors, code, message)
		}
	}
	efaOnly := ipv6(1, 0, "efa-only", 0)
	refused(template("ipv6-efa-only", ipv6(0, 0, "interface", 0), efaOnly), "c6in.32xlarge", "InvalidParameterValue", "efa-only, which does not support Ipv6AddressCount")
	noAddress := ipv6(0, 0, "interface", 0)
	noAddress.Ipv6AddressCount = nil
	refused(template("ipv6-no-address", noAddress), "m5.large", "InvalidParameterCombination", "PrimaryIpv6")

	out, err := c.ec2.CreateFleet(ctx, fleetInput(template("ipv6", ipv6(0, 0, "interface", 2)), ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets))
	ok(t, err)
	if len(out.Instances) != 1 {
		t.Fatalf("m5.large with the IPv6 template: errors %+v", out.Errors)
	}
	id := out.Instances[0].InstanceIds[0]
	desc, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	nis := desc.Reservations[0].Instances[0].NetworkInterfaces
	if len(nis) != 1 || len(nis[0].Ipv6Addresses) != 1 || !aws.ToBool(nis[0].Ipv6Addresses[0].IsPrimaryIpv6) || len(nis[0].Ipv6Prefixes) != 2 {
		t.Fatalf("instance interfaces %+v, want one with a primary IPv6 address and two IPv6 prefixes", nis)
	}
	if a := aws.ToString(nis[0].Ipv6Addresses[0].Ipv6Address); net.ParseIP(a) == nil || net.ParseIP(a).To4() != nil {
		t.Errorf("IPv6 address %q is not an IPv6 address", a)
	}
	for _, in := range c.e.Instances() {
		if in.ID == id {
			if len(in.NetworkInterfaces) != 1 || !in.NetworkInterfaces[0].PrimaryIPv6 || in.NetworkInterfaces[0].Ipv6AddressCount != 1 || in.NetworkInterfaces[0].Ipv6PrefixCount != 2 {
				t.Errorf("recorded interfaces %+v", in.NetworkInterfaces)
			}
			return
		}
	}
	t.Fatalf("instance %s not recorded", id)
}

// interfaceTemplates returns a function creating a launch template of the AL2023 x86_64
// image with the given network interfaces, returning its name.
func interfaceTemplates(t *testing.T, c *clients) func(name string, nis ...ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) string {
	t.Helper()
	ami, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("architecture", "x86_64"), filter("name", "amazon-eks-node-al2023-x86_64-standard-1.34-*")}})
	ok(t, err)
	if len(ami.Images) == 0 {
		t.Fatal("no AL2023 image")
	}
	return func(name string, nis ...ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) string {
		_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: ami.Images[0].ImageId, NetworkInterfaces: nis},
		})
		ok(t, err)
		return name
	}
}
