package instancetype

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
)

// benchProvider is a provider that has described every instance type and
// offering of the emulator, and a class with a subnet in each of its 4 zones.
func benchProvider(b *testing.B) (*Provider, *awsv1.EC2NodeClass) {
	b.Helper()
	em := awsemulator.StartForTest(b, awsemulator.Options{})
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Now())
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	p := NewProvider(ec2Client, prices, NewUnavailableOfferings(clk), clk, Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075})
	nc := nodeClass("al2023")
	nc.Status.Subnets = nil
	for _, s := range em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
		}
	}
	its, err := p.List(context.Background(), nc)
	if err != nil {
		b.Fatal(err)
	}
	if len(its) != 1363 {
		b.Fatalf("%d instance types, want 1,363", len(its))
	}
	return p, nc
}

// BenchmarkResolveAllInstanceTypes: a class seen for the first time (or whose
// kubelet, block devices or AMI family changed): labels, capacity, overhead
// and offerings of all 1,363 types, from EC2 data already fetched.
func BenchmarkResolveAllInstanceTypes(b *testing.B) {
	p, nc := benchProvider(b)
	zones := subnetZones(nc.Status.Subnets)
	b.ReportAllocs()
	for b.Loop() {
		s, err := newSettings(nc)
		if err != nil {
			b.Fatal(err)
		}
		res, err := p.resolve(context.Background(), s, zones)
		if err != nil {
			b.Fatal(err)
		}
		if list := p.withOfferings(res, nil); len(list) != 1363 {
			b.Fatal(len(list))
		}
	}
}

// BenchmarkRebuildOfferings: an ICE mark or new prices rebuild only the
// offerings (4 zones x 2 capacity types) of every type.
func BenchmarkRebuildOfferings(b *testing.B) {
	p, nc := benchProvider(b)
	s, err := newSettings(nc)
	if err != nil {
		b.Fatal(err)
	}
	res, err := p.resolve(context.Background(), s, subnetZones(nc.Status.Subnets))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.withOfferings(res, nil)
	}
}

// BenchmarkListCached: the provisioner's call for an unchanged class.
func BenchmarkListCached(b *testing.B) {
	p, nc := benchProvider(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.List(ctx, nc); err != nil {
			b.Fatal(err)
		}
	}
}
