package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// BenchmarkScaleFleet: the largest KWOK fleet, provisioned and consolidated end to end on the
// local cluster with the invariant watcher on. SCALE_NODES (default 5000) nodes of 16 vCPU
// are filled with ten 1.5-vCPU pods each (one Deployment of 10×SCALE_NODES replicas); once
// every pod runs, the Deployment is scaled to half and consolidation enabled (budget 10%),
// and the benchmark waits until the pods run on at most 60% of the nodes. It prints nodes,
// pods, the time to all Running, the time to consolidate, the controller's CPU time and peak
// RSS, and the machine's load. Run it alone, with
//
//	SCALE_NODES=5000 go test ./test/e2e -run '^$' -bench ScaleFleet -benchtime 1x -timeout 3h
func BenchmarkScaleFleet(b *testing.B) {
	nodes := 5000
	if s := os.Getenv("SCALE_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SCALE_NODES=%q: want a positive number of nodes", s)
		}
		nodes = n
	}
	pods := int32(10 * nodes)
	e := startProvisioning(b)
	np := disruptionPool("default", v1.Never, "10%")
	np.Spec.Template.Spec.Requirements = setRequirement(kit.DefaultNodePool("default", "default", 16).Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"16"}})
	w := startInvariantWatcher(b, e, "default")
	// On a loaded machine the API server can be too slow for the leader Lease to be renewed:
	// Karpenter then exits, and is restarted as the kubelet would.
	restarts := e.supervise(b, nil)
	e.apply(b, kit.DefaultNodeClass(0), np)
	if err := kit.NodeClassReady(e.ctx, e.Client, "default", time.Minute); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before, err := e.current().ResourceUsage()
		if err != nil {
			b.Fatal(err)
		}
		dep := kit.Deployment("default", "fleet", pods, "1500m", "1Gi", false)
		start := time.Now()
		e.apply(b, dep)
		last := waitFleet(b, e, 90*time.Minute, func(c *kit.Counts) bool {
			return c.Pods == int(pods) && c.Running == int(pods)
		})
		running := time.Since(start)
		peakNodes := last.Nodes
		fmt.Printf("scale: %d pods Running on %d nodes after %s (load %s)\n", pods, last.Nodes, running.Round(time.Second), loadAvg())

		// Half the pods go; consolidation packs the rest onto about half the nodes.
		half := pods / 2
		if err := e.Client.Patch(e.ctx, dep, client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, half))); err != nil {
			b.Fatal(err)
		}
		waitFleet(b, e, 30*time.Minute, func(c *kit.Counts) bool { return c.Pods == int(half) && c.Running == int(half) })
		cstart := time.Now()
		e.updateNodePool(b, "default", func(np *v1.NodePool) {
			np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		})
		target := peakNodes * 6 / 10
		last = waitFleet(b, e, 90*time.Minute, func(c *kit.Counts) bool {
			return c.Nodes <= target && c.NodeClaimsAll == c.Nodes && c.Pods == int(half) && c.Running == int(half)
		})
		consolidated := time.Since(cstart)
		after, err := e.current().ResourceUsage()
		if err != nil {
			b.Fatal(err)
		}
		cpu := after.CPU - before.CPU
		if restarts() > 0 {
			cpu = after.CPU // the last process's own
		}
		b.ReportMetric(float64(peakNodes), "nodes")
		b.ReportMetric(float64(pods), "pods")
		b.ReportMetric(running.Seconds(), "s-to-all-running")
		b.ReportMetric(consolidated.Seconds(), "s-to-consolidate")
		b.ReportMetric(float64(last.Nodes), "nodes-after")
		b.ReportMetric(cpu.Seconds(), "controller-cpu-s")
		b.ReportMetric(float64(after.PeakRSS)/(1<<20), "controller-peak-MiB")
		b.ReportMetric(float64(restarts()), "controller-restarts")
		fmt.Printf("scale: %d nodes / %d pods Running after %s; half the pods gone, consolidated to %d nodes in %s; controller CPU %s, peak RSS %.0f MiB (restarts %d: figures of the last process); load %s\n",
			peakNodes, pods, running.Round(time.Second), last.Nodes, consolidated.Round(time.Second),
			cpu.Round(10*time.Millisecond), float64(after.PeakRSS)/(1<<20), restarts(), loadAvg())
		if w.KarpenterRemovals() == 0 {
			b.Error("the invariant watcher saw no pod removed by Karpenter: it judged nothing")
		}
		w.Assert(b)
		if i < b.N-1 {
			b.Fatal("BenchmarkScaleFleet runs once: use -benchtime 1x")
		}
	}
}

// waitFleet polls the counts every 2 s (a list of 50,000 pods is not free) until done.
func waitFleet(b *testing.B, e *provisioningEnv, timeout time.Duration, done func(*kit.Counts) bool) *kit.Counts {
	b.Helper()
	var last *kit.Counts
	err := wait.PollUntilContextTimeout(e.ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		c, err := kit.Count(ctx, e.Client, "default")
		if err != nil {
			return false, nil // the API server is busy: ask again
		}
		last = c
		return done(c), nil
	})
	if err != nil {
		if last == nil {
			b.Fatalf("no counts: %v", err)
		}
		b.Fatalf("%v: pods %d running %d, nodes %d, nodeclaims %v (log %s)", err, last.Pods, last.Running, last.Nodes, last.NodeClaims, e.karpenter.LogPath)
	}
	return last
}

func loadAvg() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(string(out))
	if i := strings.Index(s, "load average"); i >= 0 {
		return s[i:]
	}
	return s
}
