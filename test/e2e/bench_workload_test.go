package e2e_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// mixedWorkload is the 1,000 pods both provisioning benchmarks create: 400
// plain pods (900m, 3100Mi), 300 pods spread over zones (500m, 1Gi), 200
// large pods (3500m, 28Gi) and 100 arm64 pods (250m, 256Mi).
func mixedWorkload() []*appsv1.Deployment {
	arm := kit.Deployment("default", "arm", 100, "250m", "256Mi", false)
	arm.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	return []*appsv1.Deployment{
		kit.Deployment("default", "plain", 400, "900m", "3100Mi", false),
		kit.Deployment("default", "zonal", 300, "500m", "1Gi", true),
		kit.Deployment("default", "large", 200, "3500m", "28Gi", false),
		arm,
	}
}

func replicas(deps []*appsv1.Deployment) int {
	n := 0
	for _, d := range deps {
		n += int(*d.Spec.Replicas)
	}
	return n
}

// benchRun is what one run of a workload measured.
type benchRun struct {
	// detected: from applying the Deployments until the poll saw every pod
	// Running (an upper bound of the time to all Running).
	detected time.Duration
	counts   *kit.Counts
	phases   *phases
	usage    kit.Usage // the controller's CPU and peak memory over the run
}

// runWorkload applies deps and waits until all their pods run, then reads the
// cluster's timestamps into a breakdown per phase. The wait polls a
// metadata-only list of Running pods, so that the benchmark itself loads the
// API server as little as possible while it is being measured.
func runWorkload(b *testing.B, e *provisioningEnv, deps []*appsv1.Deployment, timeout time.Duration) benchRun {
	b.Helper()
	before, err := e.karpenter.ResourceUsage()
	if err != nil {
		b.Fatal(err)
	}
	want := replicas(deps)
	b.StartTimer()
	start := time.Now()
	for _, d := range deps {
		e.apply(b, d)
	}
	running := 0
	if err := poll(e.ctx, timeout, func() (bool, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := e.Client.List(e.ctx, list, client.InNamespace("default"), client.MatchingFields{"status.phase": string(corev1.PodRunning)}); err != nil {
			return false, err
		}
		running = len(list.Items)
		return running >= want, nil
	}); err != nil {
		c, _ := kit.Count(e.ctx, e.Client, "default")
		b.Fatalf("%d pods not Running (%d are): %+v (log %s)", want, running, c, e.karpenter.LogPath)
	}
	detected := time.Since(start)
	b.StopTimer()
	after, err := e.karpenter.ResourceUsage()
	if err != nil {
		b.Fatal(err)
	}
	c, err := kit.Count(e.ctx, e.Client, "default")
	if err != nil {
		b.Fatal(err)
	}
	ph, err := collectPhases(e.ctx, e.Client, "default", e.karpenter.LogPath, start)
	if err != nil {
		b.Fatal(err)
	}
	return benchRun{detected: detected, counts: c, phases: ph, usage: kit.Usage{CPU: after.CPU - before.CPU, PeakRSS: after.PeakRSS}}
}

// report prints the run's figures and its phase table and reports them as
// benchmark metrics.
func (r benchRun) report(b *testing.B, title string) {
	b.Helper()
	claims := r.phases.row("NodeClaims created (Karpenter)")
	if claims.last.IsZero() {
		claims = r.phases.row("NodeClaims created (API)")
	}
	lastClaim := claims.last.Sub(r.phases.origin)
	allRunning := r.phases.row("pods Running (KWOK)").last.Sub(r.phases.origin)
	b.ReportMetric(lastClaim.Seconds(), "s-to-last-nodeclaim")
	b.ReportMetric(allRunning.Seconds(), "s-to-all-running")
	b.ReportMetric(r.detected.Seconds(), "s-to-all-running-seen")
	b.ReportMetric(r.phases.karpenterShare().Seconds(), "s-batch-close-to-nodeclaims")
	b.ReportMetric(r.usage.CPU.Seconds(), "controller-cpu-s")
	b.ReportMetric(float64(r.usage.PeakRSS)/(1<<20), "controller-peak-MiB")
	b.ReportMetric(float64(r.counts.Nodes), "nodes")
	b.ReportMetric(r.counts.CostPerHour, "$/h")
	fmt.Printf("%s: last NodeClaim created %s and all pods Running %s after the first pod was created (seen Running %s after the Deployments were applied); "+
		"batch close -> its NodeClaims created at most %s; %d NodeClaims/%d nodes, $%.2f/h; controller CPU %s (%.2f cores avg), peak RSS %.0f MiB\n%s",
		title, lastClaim.Round(10*time.Millisecond), allRunning.Round(10*time.Millisecond), r.detected.Round(10*time.Millisecond),
		r.phases.karpenterShare().Round(time.Millisecond), r.counts.NodeClaimsAll, r.counts.Nodes, r.counts.CostPerHour,
		r.usage.CPU.Round(10*time.Millisecond), r.usage.CPU.Seconds()/r.detected.Seconds(), float64(r.usage.PeakRSS)/(1<<20), r.phases)
}
