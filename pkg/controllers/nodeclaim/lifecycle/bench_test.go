package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// BenchmarkLaunchAndRegister measures one lifecycle pass that launches a KWOK
// instance and registers its node, against the real API server: create the
// NodeClaim, then Reconcile (Create writes the Node, registration patches it,
// the NodeClaim's metadata and status are written). It reports NodeClaims per
// second for a single worker; the manager runs many workers.
func BenchmarkLaunchAndRegister(b *testing.B) {
	f := setupB(b)
	i := 0
	start := time.Now()
	for b.Loop() {
		nc := nodeClaim(fmt.Sprintf("bench-%d", i), "default")
		i++
		if err := e.Client.Create(f.ctx, nc); err != nil {
			b.Fatal(err)
		}
		ExpectReconciled(f.ctx, b, f.ctrl, nc)
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "nodeclaims/s")
	b.StopTimer()
	nc := ExpectExists(f.ctx, b, e.Client, nodeClaim("bench-0", "default"))
	if !nc.StatusConditions().Get(v1.ConditionTypeRegistered).IsTrue() {
		b.Fatalf("benchmark NodeClaim not registered: %v", nc.Status.Conditions)
	}
}
