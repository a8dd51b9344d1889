package ec2bench_test

import (
	"context"
	"sync"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
)

var (
	catalogOnce sync.Once
	catalog     []*scheduling.InstanceType
	catalogErr  error
)

func sharedCatalog(tb testing.TB) []*scheduling.InstanceType {
	tb.Helper()
	catalogOnce.Do(func() { catalog, catalogErr = ec2bench.Catalog(context.Background()) })
	if catalogErr != nil {
		tb.Fatal(catalogErr)
	}
	return catalog
}

// BenchmarkEC2Cost solves each variant's workload (about 1,000 pods of 60
// Deployments) against the getting-started NodePool over the real EC2
// catalog, as provisioning does (Options.Repack), and reports the solve's $/h
// next to scheduling.LowerBound's floor and the placement loop's alone
// (placed-$/hour, solved outside the timing).
func BenchmarkEC2Cost(b *testing.B) {
	its := sharedCatalog(b)
	for _, v := range ec2bench.Variants() {
		b.Run(string(v), func(b *testing.B) {
			pods := ec2bench.Pods(ec2bench.Seed, v)
			in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{ec2bench.NodePool(v, its)}}
			placed := scheduling.Solve(in)
			in.Options.Repack = true
			bound, err := scheduling.LowerBound(in)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var res *scheduling.Results
			for i := 0; i < b.N; i++ {
				res = scheduling.Solve(in)
			}
			b.StopTimer()
			for p, err := range res.PodErrors {
				b.Fatalf("%d pods unschedulable, e.g. %s: %v", len(res.PodErrors), p.Name, err)
			}
			secs := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(len(pods))/secs, "pods/sec")
			b.ReportMetric(secs*1000, "ms/decision")
			b.ReportMetric(float64(len(pods)), "pods")
			b.ReportMetric(float64(len(res.NewClaims)), "nodes")
			b.ReportMetric(res.TotalPrice(), "$/hour")
			b.ReportMetric(bound.PricePerHour, "bound-$/hour")
			b.ReportMetric(placed.TotalPrice(), "placed-$/hour")
			b.ReportMetric(float64(len(placed.NewClaims)), "placed-nodes")
			if bound.PricePerHour > 0 {
				b.ReportMetric(res.TotalPrice()/bound.PricePerHour, "x-bound")
			}
		})
	}
}
