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
// amd64 types up to 16 cpus) under each consolidation policy and reports
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
	for _, policy := range []v1.ConsolidationPolicy{
		v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyBalanced, v1.ConsolidationPolicyWhenEmpty,
	} {
		b.Run("policy="+string(policy), func(b *testing.B) {
			cfg := kwokConfig(b, seed, policy)
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
			b.ReportMetric(r.MeanPricePerHour, "mean-$/hour")
			b.ReportMetric(r.FinalPricePerHour, "final-$/hour")
			b.ReportMetric(r.FinalBoundPerHour, "bound-$/hour")
			b.ReportMetric(r.FinalFreshPerHour, "fresh-$/hour")
			b.ReportMetric(float64(r.FinalNodes), "final-nodes")
		})
	}
}
