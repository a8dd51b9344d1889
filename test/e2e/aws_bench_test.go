package e2e_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// BenchmarkAWSProvisioning1000Pods is BenchmarkProvisioning1000Pods on the AWS path:
// the same 1,000 pods, one NodePool of linux instances up to 32 vCPU (either
// architecture, spot or on-demand) on an AL2023 EC2NodeClass, Karpenter launching
// through CreateFleet on the emulator (shipped IAM policy enforced) and the instances
// joining from their user data. Reports time to all Running, CreateFleet calls, and
// the controller's CPU and peak memory.
//
//	go test ./test/e2e -run '^$' -bench AWSProvisioning1000Pods -benchtime 1x -timeout 40m
func BenchmarkAWSProvisioning1000Pods(b *testing.B) {
	e := startAWS(b, awsOptions{})
	e.apply(b, ec2NodeClass("default", "al2023@latest"), awsNodePool("default", "default", 32))
	e.waitNodeClassReady(b, "default")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before, err := e.karpenter.ResourceUsage()
		if err != nil {
			b.Fatal(err)
		}
		fleetsBefore := e.emu.Calls("ec2", "CreateFleet")
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
		if err := poll(e.ctx, 30*time.Minute, func() (bool, error) {
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
		fleets := e.emu.Calls("ec2", "CreateFleet") - fleetsBefore
		cpu := after.CPU - before.CPU
		b.ReportMetric(lastClaim.Sub(start).Seconds(), "s-to-last-nodeclaim")
		b.ReportMetric(running.Seconds(), "s-to-all-running")
		b.ReportMetric(float64(fleets), "CreateFleet-calls")
		b.ReportMetric(cpu.Seconds(), "controller-cpu-s")
		b.ReportMetric(float64(after.PeakRSS)/(1<<20), "controller-peak-MiB")
		b.ReportMetric(float64(last.Nodes), "nodes")
		b.ReportMetric(last.CostPerHour, "$/h")
		fmt.Printf("AWS 1000 pods: last NodeClaim created after %s, all Running after %s; %d NodeClaims/%d nodes in %d CreateFleet calls, $%.2f/h; controller CPU %s (%.2f cores avg), peak RSS %.0f MiB\n",
			lastClaim.Sub(start).Round(10*time.Millisecond), running.Round(10*time.Millisecond), claims, last.Nodes, fleets, last.CostPerHour,
			cpu.Round(10*time.Millisecond), cpu.Seconds()/running.Seconds(), float64(after.PeakRSS)/(1<<20))
		if i < b.N-1 {
			cleanupWorkload(b, e.provisioningEnv, deps)
		}
		b.StartTimer()
	}
}
