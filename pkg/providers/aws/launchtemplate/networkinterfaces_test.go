package launchtemplate_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// A class's spec.networkInterfaces become the template's interfaces, in
// order, by card and device index and type, each with the class's security
// groups and no subnet (the fleet's applies); the public address and the
// prefixes go to IP interfaces only, never to an efa-only one. The template
// launches, and the instance has those interfaces.
func TestClassNetworkInterfacesReachTheTemplate(t *testing.T) {
	env := launchtest.New(t)
	plain := ensure(t, env, env.LaunchTemplates, "default")

	nc := env.NodeClass(t, "efa")
	nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	nc.Spec.AssociatePublicIPAddress = aws.Bool(false)
	nc.Spec.IPPrefixCount = aws.Int32(2)
	claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "c6in.32xlarge")
	its := env.InstanceTypesFor(t, nc, claim)
	if len(its) != 1 {
		t.Fatalf("instance types for the EFA class: %d, want c6in.32xlarge", len(its))
	}
	launches, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, its, "on-demand", "", env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Name == plain[0].Name {
		t.Fatalf("classes with and without network interfaces share template %s", plain[0].Name)
	}
	var data map[string]string
	for _, lt := range env.Emulator.LaunchTemplates() {
		if lt.Name == launches[0].Name {
			data = lt.Data
		}
	}
	sg := nc.Status.SecurityGroups[0].ID
	want := map[string]string{
		"NetworkInterface.1.NetworkCardIndex":         "0",
		"NetworkInterface.1.DeviceIndex":              "0",
		"NetworkInterface.1.InterfaceType":            "interface",
		"NetworkInterface.1.AssociatePublicIpAddress": "false",
		"NetworkInterface.1.Ipv4PrefixCount":          "2",
		"NetworkInterface.1.SecurityGroupId.1":        sg,
		"NetworkInterface.2.NetworkCardIndex":         "1",
		"NetworkInterface.2.DeviceIndex":              "0",
		"NetworkInterface.2.InterfaceType":            "efa-only",
		"NetworkInterface.2.SecurityGroupId.1":        sg,
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("launch template %s = %q, want %q", k, data[k], v)
		}
	}
	for _, k := range []string{"NetworkInterface.2.AssociatePublicIpAddress", "NetworkInterface.2.Ipv4PrefixCount", "NetworkInterface.1.SubnetId", "NetworkInterface.2.SubnetId", "SecurityGroupId.1", "NetworkInterface.3.DeviceIndex"} {
		if v, ok := data[k]; ok {
			t.Errorf("launch template sets %s = %q, want it unset", k, v)
		}
	}

	inst, err := env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), its)
	if err != nil {
		t.Fatalf("launch with the network interfaces: %v", err)
	}
	for _, in := range env.Emulator.Instances() {
		if in.ID != inst.ID {
			continue
		}
		if len(in.NetworkInterfaces) != 2 || in.NetworkInterfaces[1].InterfaceType != "efa-only" || in.NetworkInterfaces[1].NetworkCardIndex != 1 ||
			in.NetworkInterfaces[0].InterfaceType != "interface" || in.NetworkInterfaces[0].SubnetID != in.SubnetID {
			t.Errorf("instance interfaces %+v, want the class's two in subnet %s", in.NetworkInterfaces, in.SubnetID)
		}
		if len(in.SecurityGroupIDs) != 1 || in.SecurityGroupIDs[0] != sg {
			t.Errorf("instance security groups %v, want [%s]", in.SecurityGroupIDs, sg)
		}
		return
	}
	t.Fatalf("instance %s not in the emulator", inst.ID)
}
