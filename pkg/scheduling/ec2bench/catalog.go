// Package ec2bench is a cost benchmark of the scheduling solver on the real EC2
// catalog: every instance type of the AWS emulator's facts file (us-east-1
// on-demand prices), resolved into scheduling.InstanceTypes by the AWS
// provider itself, a getting-started NodePool over them, and seeded
// Deployment-shaped workloads (workload.go). BenchmarkEC2Cost reports the
// solver's $/h next to scheduling.LowerBound's.
package ec2bench

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Region is the catalog's region: the facts file's on-demand prices are us-east-1's.
const Region = "us-east-1"

// Zones are the subnet zones of the catalog's EC2NodeClass.
var Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// Catalog returns every instance type an AL2023 EC2NodeClass with a subnet in
// each of Zones can launch, exactly as the AWS provider lists them to the
// provisioner: capacity, kube-reserved and eviction overhead, ENI-limited max
// pods (VM_MEMORY_OVERHEAD_PERCENT 0.075, RESERVED_ENIS 0), labels, and an
// on-demand and a spot offering per zone. Prices come through the provider's
// pricing client from the emulator: on-demand ones are the facts file's; spot
// ones are the emulator's (on-demand times a per type and zone factor in
// [0.30, 0.70]), not a market's.
func Catalog(ctx context.Context) ([]*scheduling.InstanceType, error) {
	em, err := awsemulator.Start(awsemulator.Options{Region: Region, Zones: Zones})
	if err != nil {
		return nil, err
	}
	defer em.Close()
	cfg := em.AWSConfig()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	if err := prices.UpdateOnDemandPricing(ctx); err != nil {
		return nil, fmt.Errorf("on-demand prices: %w", err)
	}
	if err := prices.UpdateSpotPricing(ctx); err != nil {
		return nil, fmt.Errorf("spot prices: %w", err)
	}
	p := instancetype.NewProvider(ec2Client, prices, instancetype.NewUnavailableOfferings(clk), clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075})
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	for _, s := range em.Subnets() {
		if s.Tags["karpenter.sh/discovery"] != "" {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
		}
	}
	return p.List(ctx, nc)
}
