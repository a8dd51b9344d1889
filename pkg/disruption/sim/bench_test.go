package sim_test

import (
	"os"
	"strconv"
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption/sim"
)

// BenchmarkConsolidationPolicies replays one churning workload (seed 1, or
// SIM_SEED's: 32
// Deployments over 48 hourly steps, two daily waves, on the KWOK catalog's
// amd64 types up to 16 cpus, or the real EC2 catalog's with SIM_CATALOG=ec2) under each consolidation policy (and, with
// "/upstream-moves", without repack consolidation) and reports
// what each did: moves (disruption decisions), pods-evicted, the fleet's mean
// and final $/hour, and the lower bound's $/hour for the final step's pods.
// One op is a whole replay; the figures are the same every op.
func BenchmarkConsolidationPolicies(b *testing.B) {
	seed := int64(1)
	if v := os.Getenv("SIM_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			b.Fatalf("SIM_SEED=%q: %v", v, err)
		}
	}
	leastAllocated := os.Getenv("SIM_SCHEDULER") == "least-allocated"
	config := kwokConfig
	if os.Getenv("SIM_CATALOG") == "ec2" {
		config = ec2Config
	}
	type run struct {
		name     string
		policy   v1.ConsolidationPolicy
		upstream bool
	}
	for _, r := range []run{
		{"WhenEmptyOrUnderutilized", v1.ConsolidationPolicyWhenEmptyOrUnderutilized, false},
		{"WhenEmptyOrUnderutilized/upstream-moves", v1.ConsolidationPolicyWhenEmptyOrUnderutilized, true},
		{"Balanced", v1.ConsolidationPolicyBalanced, false},
		{"Balanced/upstream-moves", v1.ConsolidationPolicyBalanced, true},
		{"WhenEmpty", v1.ConsolidationPolicyWhenEmpty, false},
	} {
		b.Run("policy="+r.name, func(b *testing.B) {
			cfg := config(b, seed, r.policy)
			cfg.UpstreamMovesOnly = r.upstream
			cfg.LeastAllocated = leastAllocated
			var r *sim.Report
			for b.Loop() {
				var err error
				if r, err = sim.Run(cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Moves), "moves")
			b.ReportMetric(float64(r.Disrupted), "nodes-disrupted")
			b.ReportMetric(float64(r.Replacements), "replacements")
			b.ReportMetric(float64(r.Evicted), "pods-evicted")
			b.ReportMetric(float64(r.Refused), "refused")
			b.ReportMetric(float64(r.Relaunched), "relaunched")
			b.ReportMetric(r.MeanPricePerHour, "mean-$/hour")
			b.ReportMetric(r.FinalPricePerHour, "final-$/hour")
			b.ReportMetric(r.FinalBoundPerHour, "bound-$/hour")
			b.ReportMetric(r.FinalFreshPerHour, "fresh-$/hour")
			b.ReportMetric(float64(r.FinalNodes), "final-nodes")
		})
	}
}
