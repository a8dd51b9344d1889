package instancetype_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// spec.networkInterfaces narrows the types to those with the network cards,
// device indexes and EFA interfaces the class names (as DescribeInstanceTypes
// reports them); vpc.amazonaws.com/efa then counts the class's efa-only
// interfaces, and an efa-only interface on network card 0 takes one ENI's
// addresses off the pod limit.
func TestNetworkInterfacesNarrowTypesAndShapeCapacity(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	list := func(nc *awsv1.EC2NodeClass) map[string]corev1.ResourceList {
		its, err := f.provider.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]corev1.ResourceList{}
		for _, it := range its {
			out[it.Name] = it.Capacity
		}
		return out
	}
	infos := map[string]ec2types.InstanceTypeInfo{}
	pages := ec2.NewDescribeInstanceTypesPaginator(ec2.NewFromConfig(f.em.AWSConfig()), &ec2.DescribeInstanceTypesInput{})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range out.InstanceTypes {
			infos[string(info.InstanceType)] = info
		}
	}
	interfaces := func(nis ...awsv1.NetworkInterface) func(*awsv1.EC2NodeClass) {
		return func(nc *awsv1.EC2NodeClass) {
			for i := range nis {
				nc.Spec.NetworkInterfaces = append(nc.Spec.NetworkInterfaces, &nis[i])
			}
		}
	}
	primary := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}
	plain := list(f.nodeClass())

	// An efa-only interface on a second card: only types with two cards and EFA.
	card1 := list(f.nodeClass(interfaces(primary, awsv1.NetworkInterface{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly})))
	if len(card1) == 0 || len(card1) >= len(plain) {
		t.Fatalf("efa-only on card 1: %d types of %d", len(card1), len(plain))
	}
	for _, name := range []string{"m5.large", "c5n.18xlarge"} {
		if _, ok := card1[name]; ok {
			t.Errorf("efa-only on card 1 offers %s (no EFA or one network card)", name)
		}
	}
	for name, c := range card1 {
		info := infos[name]
		if len(info.NetworkInfo.NetworkCards) < 2 || info.NetworkInfo.EfaInfo == nil || *info.NetworkInfo.EfaInfo.MaximumEfaInterfaces < 1 {
			t.Errorf("%s offered without a second card or EFA", name)
		}
		if q := c[awsv1.ResourceEFA]; q.Value() != 1 {
			t.Errorf("%s: efa capacity %s, want the class's one efa-only interface", name, q.String())
		}
		if pods, was := c[corev1.ResourcePods], plain[name][corev1.ResourcePods]; pods.Value() != was.Value() {
			t.Errorf("%s: pods %d, want %d (card 1 is not the CNI's)", name, pods.Value(), was.Value())
		}
	}
	if _, ok := card1["c6in.32xlarge"]; !ok {
		t.Errorf("efa-only on card 1 does not offer c6in.32xlarge (two cards, EFA)")
	}

	// An efa-only interface on card 0 costs the CNI an ENI.
	card0 := list(f.nodeClass(interfaces(primary, awsv1.NetworkInterface{DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly})))
	c5n, ok := card0["c5n.18xlarge"]
	if !ok {
		t.Fatal("efa-only on card 0 does not offer c5n.18xlarge")
	}
	perENI := int64(*infos["c5n.18xlarge"].NetworkInfo.Ipv4AddressesPerInterface)
	if pods, was := c5n[corev1.ResourcePods], plain["c5n.18xlarge"][corev1.ResourcePods]; pods.Value() != was.Value()-(perENI-1) {
		t.Errorf("c5n.18xlarge pods %d, want %d less one ENI's %d addresses", pods.Value(), was.Value(), perENI-1)
	}
	if _, ok := card0["m5.large"]; ok {
		t.Errorf("efa-only interface offers m5.large (no EFA)")
	}

	// Only the primary interface: every ENA type, and no EFA resource even
	// where the type has EFA.
	only := list(f.nodeClass(interfaces(primary)))
	if _, ok := only["m5.large"]; !ok {
		t.Errorf("primary interface only: m5.large not offered")
	}
	if q, ok := only["c5n.18xlarge"][awsv1.ResourceEFA]; ok {
		t.Errorf("primary interface only: c5n.18xlarge efa capacity %s, want none", q.String())
	}
	if q := plain["c5n.18xlarge"][awsv1.ResourceEFA]; q.Value() != 1 {
		t.Errorf("class without interfaces: c5n.18xlarge efa %s, want its 1", q.String())
	}

	// A device index beyond the card's interfaces rules the type out.
	deep := list(f.nodeClass(interfaces(primary, awsv1.NetworkInterface{DeviceIndex: 3, InterfaceType: awsv1.InterfaceTypeInterface})))
	if _, ok := deep["m5.large"]; ok {
		t.Errorf("device index 3 offers m5.large (3 interfaces)")
	}
	if _, ok := deep["m5.xlarge"]; !ok {
		t.Errorf("device index 3 does not offer m5.xlarge (4 interfaces)")
	}
}
