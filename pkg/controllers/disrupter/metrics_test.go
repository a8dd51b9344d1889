package disrupter_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
)

// TestConsolidationTimeoutsCounted: a pass bounded to almost no simulation
// work stops multi-node and single-node consolidation at the bound, and
// karpenter_voluntary_disruption_consolidation_timeouts_total counts one
// timeout for each of them (and none for emptiness, which does not simulate).
func TestConsolidationTimeoutsCounted(t *testing.T) {
	f := newFixture(t)
	prov := provisioning.NewProvisioner(testEnv.Client, f.cp, f.cluster, f.recorder, f.clock, provisioning.Options{SyncTimeout: 2 * time.Second})
	f.ctrl = disrupter.NewController(testEnv.Client, f.cluster, prov, f.cp, f.queue, f.recorder, f.clock, disrupter.Options{MaxSimulationWork: 1})
	for i := 0; i < 3; i++ {
		n, _ := f.node(t, "t"+strconv.Itoa(i), "c-4x-amd64-linux")
		f.pod(t, "tp"+strconv.Itoa(i), n.Name, "1", nil)
	}
	before := map[string]float64{}
	for _, ct := range []string{"empty", "single", "multi"} {
		before[ct] = testutil.ToFloat64(disrupter.ConsolidationTimeoutsTotal.WithLabelValues(ct))
	}
	if r := f.pass(t); r.err != nil {
		t.Fatalf("pass: %v", r.err)
	}
	for ct, want := range map[string]float64{"empty": 0, "single": 1, "multi": 1} {
		if got := testutil.ToFloat64(disrupter.ConsolidationTimeoutsTotal.WithLabelValues(ct)) - before[ct]; got != want {
			t.Errorf("consolidation_timeouts_total{consolidation_type=%s} rose by %v, want %v", ct, got, want)
		}
	}
}
