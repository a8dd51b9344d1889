package instance_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// When EC2 refuses a class's network interfaces for the instance type (here
// an efa-only interface on m5.large, which has no EFA), the launch fails
// with a CreateError whose reason and message (the NodeClaim's Launched
// condition and LaunchFailed event) name spec.networkInterfaces and carry
// EC2's error; nothing is launched.
func TestRefusedNetworkInterfacesNameTheField(t *testing.T) {
	env := launchtest.New(t)
	plain := env.NodeClass(t, "plain")
	claim := launchtest.NodeClaim("claim", plain, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	// The types of a class without interfaces: the type list of the EFA
	// class itself would not offer m5.large at all.
	its := env.InstanceTypesFor(t, plain, claim)
	if len(its) != 1 {
		t.Fatalf("instance types: %d, want m5.large", len(its))
	}

	nc := env.NodeClass(t, "efa")
	nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{InterfaceType: awsv1.InterfaceTypeInterface},
		{DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	claim.Spec.NodeClassRef.Name = nc.Name
	_, err := env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), its)
	var createErr *cloudprovider.CreateError
	if !errors.As(err, &createErr) || createErr.ConditionReason != instance.ReasonNetworkInterfacesRefused {
		t.Fatalf("error %v, want a CreateError with reason %s", err, instance.ReasonNetworkInterfacesRefused)
	}
	for _, s := range []string{err.Error(), createErr.ConditionMessage} {
		if !strings.Contains(s, "spec.networkInterfaces") || !strings.Contains(s, "InvalidParameterCombination") {
			t.Errorf("%q does not name spec.networkInterfaces and EC2's InvalidParameterCombination", s)
		}
	}
	if n := len(env.Emulator.Instances()); n != 0 {
		t.Errorf("%d instances launched", n)
	}

	// The same type launches for the class without interfaces.
	if _, err := env.Instances.Create(context.Background(), plain, launchtest.NodeClaim("plain", plain, []string{scheduling.CapacityTypeOnDemand}, "m5.large"), env.Tags(plain, claim), its); err != nil {
		t.Fatalf("launch of the plain class: %v", err)
	}
}
