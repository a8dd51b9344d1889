package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkAWSProvisioning1000Pods is BenchmarkProvisioning1000Pods on the AWS path:
// the same 1,000 pods, one NodePool of linux instances up to 32 vCPU (either
// architecture, spot or on-demand) on an AL2023 EC2NodeClass, Karpenter launching
// through CreateFleet on the emulator (shipped IAM policy enforced) and the instances
// joining from their user data. Reports the same figures and phase table, plus the
// CreateFleet calls.
//
//	go test ./test/e2e -run '^$' -bench AWSProvisioning1000Pods -benchtime 1x -timeout 40m
func BenchmarkAWSProvisioning1000Pods(b *testing.B) {
	e := startAWS(b, awsOptions{})
	e.apply(b, ec2NodeClass("default", "al2023@latest"), awsNodePool("default", "default", 32))
	e.waitNodeClassReady(b, "default")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fleetsBefore := e.emu.Calls("ec2", "CreateFleet")
		deps := mixedWorkload()
		r := runWorkload(b, e.provisioningEnv, deps, 30*time.Minute)
		fleets := e.emu.Calls("ec2", "CreateFleet") - fleetsBefore
		b.ReportMetric(float64(fleets), "CreateFleet-calls")
		// AWS nodes carry no price label (KWOK's do): the $/h is the emulator's prices
		// (spot per zone, on-demand per type) of the nodes standing at the end.
		r.counts.CostPerHour = emulatorCost(b, e, r.counts.NodesByType)
		r.report(b, fmt.Sprintf("AWS 1000 pods (%d CreateFleet calls)", fleets))
		if i < b.N-1 {
			cleanupWorkload(b, e.provisioningEnv, deps)
		}
		b.StartTimer()
	}
}

// emulatorCost prices kit.Counts' NodesByType ("instance-type zone capacity-type" -> nodes)
// by the emulator's prices; a node it cannot price fails the benchmark rather than
// printing a total that leaves it out.
func emulatorCost(b *testing.B, e *awsEnv, byType map[string]int) float64 {
	b.Helper()
	total := 0.0
	for key, n := range byType {
		f := strings.Fields(key)
		if len(f) != 3 {
			b.Fatalf("node shape %q: want instance type, zone and capacity type", key)
		}
		p, ok := e.emu.Price(f[0], f[1], f[2])
		if !ok {
			b.Fatalf("the emulator has no price for %s", key)
		}
		total += p * float64(n)
	}
	return total
}
