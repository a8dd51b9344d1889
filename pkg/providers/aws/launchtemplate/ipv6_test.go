package launchtemplate_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// In an IPv6 cluster (the kube DNS address is IPv6) every interface a
// template creates that carries IP traffic gets one IPv6 address, made its
// primary IPv6 address, and ipPrefixCount becomes IPv6 prefixes: the
// default primary interface (which the template now always names), the
// interfaces of an EFA request, and the class's spec.networkInterfaces,
// efa-only ones aside. The requests reach EC2 as CreateLaunchTemplate
// parameters, and the instance launched from such a template has its
// primary IPv6 address. An IPv4 cluster's template is unchanged.
func TestIPv6ClusterInterfaces(t *testing.T) {
	env := launchtest.New(t)
	ipv6 := launchtemplate.NewProvider(env.EC2, amifamily.NewResolver(), env.Clock, launchtemplate.Options{
		ClusterName: env.ClusterName, EKS: eks.NewFromConfig(env.Config), KubeDNSIP: "fd01:ab::a",
	})
	templateData := func(t *testing.T, nc *awsv1.EC2NodeClass, instanceType string, efa bool) map[string]string {
		t.Helper()
		claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, instanceType)
		claim.Spec.NodeClassRef.Name = nc.Name
		if efa {
			claim.Spec.Resources.Requests = corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1")}
		}
		its := env.InstanceTypesFor(t, nc, claim)
		if len(its) != 1 {
			t.Fatalf("instance types for %s: %d, want %s", nc.Name, len(its), instanceType)
		}
		launches, err := ipv6.EnsureAll(context.Background(), nc, claim, its, "on-demand", "", env.Tags(nc, claim))
		if err != nil {
			t.Fatal(err)
		}
		for _, lt := range env.Emulator.LaunchTemplates() {
			if lt.Name == launches[0].Name {
				return lt.Data
			}
		}
		t.Fatalf("template %s not in the emulator", launches[0].Name)
		return nil
	}
	expect := func(t *testing.T, data map[string]string, set map[string]string, unset ...string) {
		t.Helper()
		for k, v := range set {
			if data[k] != v {
				t.Errorf("launch template %s = %q, want %q", k, data[k], v)
			}
		}
		for _, k := range unset {
			if v, ok := data[k]; ok {
				t.Errorf("launch template sets %s = %q, want it unset", k, v)
			}
		}
	}

	t.Run("default interface", func(t *testing.T) {
		nc := env.NodeClass(t, "ipv6-default")
		data := templateData(t, nc, "m5.large", false)
		expect(t, data, map[string]string{
			"NetworkInterface.1.DeviceIndex":       "0",
			"NetworkInterface.1.PrimaryIpv6":       "true",
			"NetworkInterface.1.Ipv6AddressCount":  "1",
			"NetworkInterface.1.SecurityGroupId.1": nc.Status.SecurityGroups[0].ID,
		}, "SecurityGroupId.1", "NetworkInterface.1.Ipv4PrefixCount", "NetworkInterface.1.Ipv6PrefixCount", "NetworkInterface.2.DeviceIndex")
	})
	t.Run("prefixes", func(t *testing.T) {
		nc := env.NodeClass(t, "ipv6-prefixes")
		nc.Spec.IPPrefixCount = aws.Int32(2)
		expect(t, templateData(t, nc, "m5.large", false), map[string]string{
			"NetworkInterface.1.PrimaryIpv6":      "true",
			"NetworkInterface.1.Ipv6AddressCount": "1",
			"NetworkInterface.1.Ipv6PrefixCount":  "2",
		}, "NetworkInterface.1.Ipv4PrefixCount")
	})
	t.Run("EFA interfaces", func(t *testing.T) {
		nc := env.NodeClass(t, "ipv6-efa")
		data := templateData(t, nc, "c6in.32xlarge", true)
		expect(t, data, map[string]string{
			"NetworkInterface.1.InterfaceType":    "efa",
			"NetworkInterface.1.PrimaryIpv6":      "true",
			"NetworkInterface.1.Ipv6AddressCount": "1",
			"NetworkInterface.2.InterfaceType":    "efa",
			"NetworkInterface.2.NetworkCardIndex": "1",
			"NetworkInterface.2.PrimaryIpv6":      "true",
			"NetworkInterface.2.Ipv6AddressCount": "1",
		}, "NetworkInterface.3.DeviceIndex")
	})
	t.Run("class interfaces", func(t *testing.T) {
		nc := env.NodeClass(t, "ipv6-class")
		nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
			{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		}
		nc.Spec.IPPrefixCount = aws.Int32(3)
		claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "c6in.32xlarge")
		claim.Spec.NodeClassRef.Name = nc.Name
		its := env.InstanceTypesFor(t, nc, claim)
		data := templateData(t, nc, "c6in.32xlarge", false)
		expect(t, data, map[string]string{
			"NetworkInterface.1.InterfaceType":    "interface",
			"NetworkInterface.1.PrimaryIpv6":      "true",
			"NetworkInterface.1.Ipv6AddressCount": "1",
			"NetworkInterface.1.Ipv6PrefixCount":  "3",
			"NetworkInterface.2.InterfaceType":    "efa-only",
		}, "NetworkInterface.1.Ipv4PrefixCount", "NetworkInterface.2.PrimaryIpv6", "NetworkInterface.2.Ipv6AddressCount", "NetworkInterface.2.Ipv6PrefixCount")

		// EC2 (the emulator) takes the template: the instance's first
		// interface has its primary IPv6 address and prefixes.
		launches, err := ipv6.EnsureAll(context.Background(), nc, claim, its, "on-demand", "", env.Tags(nc, claim))
		if err != nil {
			t.Fatal(err)
		}
		out, err := env.EC2.CreateFleet(context.Background(), &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(launches[0].ID), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType("c6in.32xlarge"), SubnetId: aws.String(nc.Status.Subnets[0].ID)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
			t.Fatalf("CreateFleet with the IPv6 template: instances %+v, errors %+v", out.Instances, out.Errors)
		}
		id := out.Instances[0].InstanceIds[0]
		desc, err := env.EC2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		nis := desc.Reservations[0].Instances[0].NetworkInterfaces
		if len(nis) != 2 || len(nis[0].Ipv6Addresses) != 1 || !aws.ToBool(nis[0].Ipv6Addresses[0].IsPrimaryIpv6) || len(nis[0].Ipv6Prefixes) != 3 || len(nis[1].Ipv6Addresses) != 0 {
			t.Errorf("DescribeInstances interfaces %+v, want a primary IPv6 address and 3 prefixes on the first only", nis)
		}
		for _, in := range env.Emulator.Instances() {
			if in.ID != id {
				continue
			}
			if len(in.NetworkInterfaces) != 2 || !in.NetworkInterfaces[0].PrimaryIPv6 || in.NetworkInterfaces[0].Ipv6AddressCount != 1 ||
				in.NetworkInterfaces[0].Ipv6PrefixCount != 3 || in.NetworkInterfaces[1].PrimaryIPv6 {
				t.Errorf("instance interfaces %+v", in.NetworkInterfaces)
			}
			return
		}
		t.Fatalf("instance %s not in the emulator", id)
	})
	t.Run("IPv4 cluster", func(t *testing.T) {
		launches := ensure(t, env, env.LaunchTemplates, "ipv4")
		for _, lt := range env.Emulator.LaunchTemplates() {
			if lt.Name == launches[0].Name {
				expect(t, lt.Data, map[string]string{"SecurityGroupId.1": env.NodeClass(t, "ipv4").Status.SecurityGroups[0].ID},
					"NetworkInterface.1.DeviceIndex", "NetworkInterface.1.PrimaryIpv6")
				return
			}
		}
		t.Fatalf("template %s not in the emulator", launches[0].Name)
	})
}
