package aws_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// A NodeClaim advertises vpc.amazonaws.com/efa only when its instance has
// EFA interfaces, as upstream: not for a plain launch of an EFA type, the
// type's count when the NodeClaim requests EFA, and the class's efa-only
// interfaces when the class lists network interfaces; Get (from
// DescribeInstances) agrees with Create.
func TestNodeClaimAdvertisesEFAOnlyWithEFAInterfaces(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	efaOf := func(capacity corev1.ResourceList) int64 {
		q, ok := capacity[awsv1.ResourceEFA]
		if !ok {
			return 0
		}
		return q.Value()
	}
	interfaces := func(providerID string) []string {
		id, _ := instance.ParseProviderID(providerID)
		for _, in := range env.Emulator.Instances() {
			if in.ID == id {
				var out []string
				for _, ni := range in.NetworkInterfaces {
					out = append(out, ni.InterfaceType)
				}
				return out
			}
		}
		t.Fatalf("no instance %s", providerID)
		return nil
	}
	check := func(name string, claimMutate func(*corev1.ResourceList), want int64, wantInterfaces []string) {
		t.Helper()
		claim := launchtest.NodeClaim(name, nc, []string{scheduling.CapacityTypeOnDemand}, "c5n.18xlarge")
		claim.Spec.Resources.Requests = corev1.ResourceList{}
		claimMutate(&claim.Spec.Resources.Requests)
		got, err := cp.Create(ctx, claim)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := efaOf(got.Status.Capacity); n != want {
			t.Errorf("%s: Create efa capacity %d, want %d", name, n, want)
		}
		if n := efaOf(got.Status.Allocatable); n != want {
			t.Errorf("%s: Create efa allocatable %d, want %d", name, n, want)
		}
		again, err := cp.Get(ctx, got.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if n := efaOf(again.Status.Capacity); n != want {
			t.Errorf("%s: Get efa capacity %d, want %d", name, n, want)
		}
		if got := interfaces(got.Status.ProviderID); len(got) != len(wantInterfaces) || (len(got) > 0 && got[len(got)-1] != wantInterfaces[len(wantInterfaces)-1]) {
			t.Errorf("%s: instance interfaces %v, want %v", name, got, wantInterfaces)
		}
	}
	check("plain", func(*corev1.ResourceList) {}, 0, nil)
	check("requested", func(r *corev1.ResourceList) { (*r)[awsv1.ResourceEFA] = mustParse("1") }, 1, []string{"efa"})

	nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{InterfaceType: awsv1.InterfaceTypeInterface},
		{DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	ExpectApplied(ctx, t, e.Client, nc)
	check("class", func(*corev1.ResourceList) {}, 1, []string{"interface", "efa-only"})
}
