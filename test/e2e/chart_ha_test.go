package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// TestChartHAHandOver: the chart's replicas: 2 as two processes with the
// chart's ServiceAccount and settings. One leads; killing it hands the Lease to
// the other under the chart's Role (the standby's update of a Lease it does
// not hold), which then provisions without creating any NodeClaim twice; no
// request of either is refused. A graceful stop (SIGTERM) of the leader
// hands over within the lease duration to a third replica. (Hand-over during a disruption, with the
// budgets and PDBs checked, is TestChaosLeaderHandover.)
func TestChartHAHandOver(t *testing.T) {
	t.Parallel()
	karpenterBinary(t)
	e := &provisioningEnv{Cluster: localcluster.Start(t), ctx: context.Background()}
	if err := kit.InstallCRDs(e.ctx, e.Client); err != nil {
		t.Fatal(err)
	}
	in := installChart(t, e.Client)
	first := e.startChartKarpenter(t, in, "karpenter-0.log")
	second := e.startChartKarpenter(t, in, "karpenter-1.log")
	var leader, standby *kit.Process
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		a, b := leaseAcquired(t, first), leaseAcquired(t, second)
		if a && b {
			t.Fatal("both replicas acquired the lease")
		}
		leader, standby = first, second
		if b {
			leader, standby = second, first
		}
		return a || b, nil
	}); err != nil {
		t.Fatalf("no replica acquired the lease: %v", err)
	}
	e.karpenter = leader
	e.apply(t, kit.DefaultNodeClass(0), disruptionPool("default", v1.Never, "1"), oneper(kit.Deployment("default", "web", 2, "1", "256Mi", false)))
	e.waitRunning(t, 2, 2*time.Minute)

	leader.Kill()
	killed := time.Now()
	if err := poll(e.ctx, time.Minute, func() (bool, error) { return leaseAcquired(t, standby), nil }); err != nil {
		t.Fatalf("the standby did not take the lease within 1m; log %s", standby.LogPath)
	}
	// A crash (SIGKILL) cannot release the Lease: the standby takes it once
	// the lease duration has passed since it last saw the leader renew
	// (client-go times the lease on the standby's own clock, immune to clock
	// skew), which is up to one jittered retry period (2 s x 2.2) after the
	// renewal, and at its next retry: at most 15 s + 2 x 4.4 s; 30 s leaves
	// room for a loaded CI machine.
	crashHandOver := time.Since(killed)
	t.Logf("hand-over %s after the leader was killed (lease duration 15s)", crashHandOver.Round(100*time.Millisecond))
	if crashHandOver > 30*time.Second {
		t.Errorf("hand-over after a crash took %s, beyond the lease duration, two retry periods and slack", crashHandOver)
	}
	e.karpenter = standby
	e.scale(t, "web", 4)
	e.waitRunning(t, 4, 2*time.Minute)
	if c := e.counts(t); c.NodeClaimsAll != 4 || c.Nodes != 4 {
		t.Errorf("%d NodeClaims and %d nodes for 4 one-per-node pods: a NodeClaim was created twice", c.NodeClaimsAll, c.Nodes)
	}

	// Deleting the leader's pod (a rollout, a drain): SIGTERM. The leader
	// releases the Lease as it stops, and the replacement takes it at its next
	// retry, well within the lease duration.
	third := e.startChartKarpenter(t, in, "karpenter-2.log")
	stopped := time.Now()
	stopErr := make(chan error, 1)
	go func() { stopErr <- standby.Stop(30 * time.Second) }()
	if err := poll(e.ctx, time.Minute, func() (bool, error) { return leaseAcquired(t, third), nil }); err != nil {
		t.Fatalf("the new replica did not take the lease within 1m of SIGTERM to the leader; log %s", third.LogPath)
	}
	graceful := time.Since(stopped)
	t.Logf("hand-over %s after SIGTERM to the leader (lease duration 15s)", graceful.Round(100*time.Millisecond))
	if graceful >= 15*time.Second {
		t.Errorf("hand-over after SIGTERM took %s, not within the 15 s lease duration: the leader did not release the Lease", graceful)
	}
	if err := <-stopErr; err != nil {
		t.Error(err)
	}
	e.karpenter = third
	e.scale(t, "web", 5)
	e.waitRunning(t, 5, 2*time.Minute)
	if c := e.counts(t); c.NodeClaimsAll != 5 || c.Nodes != 5 {
		t.Errorf("%d NodeClaims and %d nodes for 5 one-per-node pods: a NodeClaim was created twice", c.NodeClaimsAll, c.Nodes)
	}
	// client-go's results, under upstream's family (operator.New points
	// client-go's hook at it, as upstream's operator does).
	if total := scrapeCounter(t, e, "client_go_request_total"); total == 0 {
		t.Errorf("client_go_request_total is 0 on the new leader: the 403 count below would prove nothing")
	}
	if n := scrapeCounter(t, e, "client_go_request_total", `code="403"`); n != 0 {
		t.Errorf("the new leader had %v requests refused (403); log %s", n, third.LogPath)
	}
	for _, p := range []*kit.Process{first, second, third} {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if lines := forbiddenLines(string(b)); len(lines) > 0 {
			t.Errorf("%s: %d forbidden requests, first: %s", p.LogPath, len(lines), lines[0])
		}
	}
}

// leaseAcquired: the process logged that it took the leader Lease.
func leaseAcquired(t testing.TB, p *kit.Process) bool {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "uccessfully acquired lease")
}
