package sim_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption/sim"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
)

// ec2Config is a simulation over the real EC2 catalog as the AWS provider
// lists it (pkg/scheduling/ec2bench: on-demand us-east-1 prices, the
// emulator's spot prices), its amd64 types up to 16 cpus.
func ec2Config(tb testing.TB, seed int64, policy v1.ConsolidationPolicy) sim.Config {
	tb.Helper()
	its, err := ec2bench.Catalog(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return sim.Config{Seed: seed, Policy: policy, InstanceTypes: its,
		WellKnownLabels: append(append([]string(nil), scheduling.DefaultWellKnownLabels...), awsv1.WellKnownLabels...)}
}

// kwokConfig is a simulation over the KWOK provider's catalog (the one the
// disruption benchmarks use) with the solver's labels as the provider sets them.
func kwokConfig(tb testing.TB, seed int64, policy v1.ConsolidationPolicy) sim.Config {
	tb.Helper()
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	its, err := kwok.New(ctx, nil, clocktesting.NewFakeClock(time.Time{}), catalog).GetInstanceTypes(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return sim.Config{Seed: seed, Policy: policy, InstanceTypes: its,
		WellKnownLabels: append(append([]string(nil), scheduling.DefaultWellKnownLabels...), kwok.WellKnownLabels...)}
}
