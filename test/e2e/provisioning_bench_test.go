package e2e_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// BenchmarkProvisioning1000Pods: 1,000 pending pods of a mixed workload on the
// local cluster → time until the last NodeClaim is created and until every pod
// runs, with the controller's CPU time and peak memory. Run it with
//
//	go test ./test/e2e -run '^$' -bench Provisioning1000Pods -benchtime 1x -timeout 30m
//
// The workload: 400 plain pods (900m, 3100Mi), 300 pods spread over zones (500m,
// 1Gi), 200 large pods (3500m, 28Gi) and 100 arm64 pods (250m, 256Mi), against one
// NodePool of linux instances up to 32 vCPU, either architecture, spot or on-demand.
func BenchmarkProvisioning1000Pods(b *testing.B) {
	e := startProvisioning(b)
	np := kit.DefaultNodePool("default", "default", 32)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		np.Spec.Template.Spec.Requirements[0], // linux
		np.Spec.Template.Spec.Requirements[2], // spot or on-demand
		np.Spec.Template.Spec.Requirements[3], // ≤ 32 vCPU
	}
	e.apply(b, kit.DefaultNodeClass(0), np)
	if err := kit.NodeClassReady(e.ctx, e.Client, "default", time.Minute); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before, err := e.karpenter.ResourceUsage()
		if err != nil {
			b.Fatal(err)
		}
		arm := kit.Deployment("default", "arm", 100, "250m", "256Mi", false)
		arm.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
		deps := []*appsv1.Deployment{
			kit.Deployment("default", "plain", 400, "900m", "3100Mi", false),
			kit.Deployment("default", "zonal", 300, "500m", "1Gi", true),
			kit.Deployment("default", "large", 200, "3500m", "28Gi", false),
			arm,
		}
		b.StartTimer()
		start := time.Now()
		for _, d := range deps {
			e.apply(b, d)
		}
		claims, lastClaim := 0, start
		var last *kit.Counts
		if err := poll(e.ctx, 20*time.Minute, func() (bool, error) {
			c, err := kit.Count(e.ctx, e.Client, "default")
			if err != nil {
				return false, err
			}
			last = c
			if c.NodeClaimsAll != claims {
				claims, lastClaim = c.NodeClaimsAll, time.Now()
			}
			return c.Pods == 1000 && c.Running == 1000, nil
		}); err != nil {
			b.Fatalf("1000 pods not Running: %+v (log %s)", last, e.karpenter.LogPath)
		}
		running := time.Since(start)
		b.StopTimer()
		after, err := e.karpenter.ResourceUsage()
		if err != nil {
			b.Fatal(err)
		}
		cpu := after.CPU - before.CPU
		b.ReportMetric(lastClaim.Sub(start).Seconds(), "s-to-last-nodeclaim")
		b.ReportMetric(running.Seconds(), "s-to-all-running")
		b.ReportMetric(cpu.Seconds(), "controller-cpu-s")
		b.ReportMetric(float64(after.PeakRSS)/(1<<20), "controller-peak-MiB")
		b.ReportMetric(float64(last.Nodes), "nodes")
		b.ReportMetric(last.CostPerHour, "$/h")
		fmt.Printf("1000 pods: last NodeClaim created after %s, all Running after %s; %d NodeClaims/%d nodes, $%.2f/h; controller CPU %s (%.2f cores avg), peak RSS %.0f MiB\n",
			lastClaim.Sub(start).Round(10*time.Millisecond), running.Round(10*time.Millisecond), claims, last.Nodes, last.CostPerHour,
			cpu.Round(10*time.Millisecond), cpu.Seconds()/running.Seconds(), float64(after.PeakRSS)/(1<<20))
		if i < b.N-1 {
			cleanupWorkload(b, e, deps)
		}
		b.StartTimer()
	}
}

// cleanupWorkload removes the Deployments and every NodeClaim (whose finalizer
// removes the node) before the next iteration.
func cleanupWorkload(b *testing.B, e *provisioningEnv, deps []*appsv1.Deployment) {
	for _, d := range deps {
		if err := e.Client.Delete(e.ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Client.DeleteAllOf(e.ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		b.Fatal(err)
	}
	if err := e.Client.DeleteAllOf(e.ctx, &v1.NodeClaim{}); err != nil {
		b.Fatal(err)
	}
	if err := poll(e.ctx, 5*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		return err == nil && c.Pods == 0 && c.NodeClaimsAll == 0 && c.Nodes == 0, err
	}); err != nil {
		b.Fatal("cluster not emptied between iterations")
	}
}
