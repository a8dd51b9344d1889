package scheduling_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// Scale: a provisioning solve of 1,000 pending pods (the diverse workload of
// BenchmarkScheduling: plain, zonal and hostname spread, zonal affinity,
// hostname anti-affinity) against 20,000, 50,000 and 100,000 existing nodes
// of 16 cpu / 64Gi in three zones, each running ten pods.
//
//   - room: half the nodes are 40% used, half 95%: most pending pods fit on
//     existing nodes (those with hostname anti-affinity need fresh ones).
//   - full: every node is 95% used: no pending pod fits anywhere existing,
//     so every pod considers every node before a new claim opens (the worst
//     case for a first-fit scan).
//   - room-prepared: room, with the nodes read once beforehand
//     (PrepareExisting, outside the clock), as a disruption pass's solves
//     after the first see them: the figure is what a solve costs beyond
//     reading the bound pods.
//
// Run with `make bench-scale`.

func scaleNodes(n int, fullShare float64) []*scheduling.ExistingNode {
	r := rand.New(rand.NewSource(7))
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	out := make([]*scheduling.ExistingNode, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%06d", i)
		use := 0.4
		if r.Float64() < fullShare {
			use = 0.95
		}
		cpu := fmt.Sprintf("%dm", int(use*16000/10))
		mem := fmt.Sprintf("%dMi", int(use*65536/10))
		en := &scheduling.ExistingNode{
			Name: name,
			Labels: map[string]string{
				scheduling.LabelHostname: name, scheduling.LabelZone: fake.Zones[i%len(fake.Zones)],
				scheduling.LabelInstanceType: "fake-16", scheduling.LabelCapacityType: scheduling.CapacityTypeOnDemand,
				scheduling.LabelArch: "amd64", scheduling.LabelOS: "linux", "karpenter.sh/nodepool": "default",
			},
			Allocatable: alloc, Initialized: true, NodePool: "default",
		}
		for k := 0; k < 10; k++ {
			p := fake.Pod("default", fmt.Sprintf("%s-%d", name, k), cpu, mem, map[string]string{"app": fmt.Sprintf("svc-%d", (i*10+k)%500)})
			p.Spec.NodeName = name
			en.Pods = append(en.Pods, p)
		}
		out = append(out, en)
	}
	return out
}

func benchExisting(b *testing.B, nodes int, fullShare float64, prepared bool) {
	existing := scaleNodes(nodes, fullShare)
	pods := fake.DiversePods(1000)
	in := &scheduling.Input{Pods: pods, ExistingNodes: existing, NodePools: []*scheduling.NodePool{fake.BenchNodePool()}}
	if prepared {
		in.Prepared = scheduling.PrepareExisting(existing)
	}
	b.ReportAllocs()
	// The set-up's garbage (a million pods) is collected before the clock starts, so the
	// figure is the solve's own work and its own garbage, not the set-up's GC debt.
	runtime.GC()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	var res *scheduling.Results
	for i := 0; i < b.N; i++ {
		res = scheduling.Solve(in)
	}
	b.StopTimer()
	if len(res.PodErrors) > 0 {
		for p, err := range res.PodErrors {
			b.Fatalf("%d pods unschedulable, e.g. %s: %v", len(res.PodErrors), p.Name, err)
		}
	}
	onExisting := 0
	for _, e := range res.ExistingNodes {
		onExisting += len(e.Pods)
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/solve")
	b.ReportMetric(float64(onExisting), "pods_on_existing")
	b.ReportMetric(float64(len(res.NewClaims)), "new_nodes")
}

func BenchmarkScaleSolveExisting(b *testing.B) {
	for _, n := range []int{20000, 50000, 100000} {
		b.Run(fmt.Sprintf("nodes=%d/room", n), func(b *testing.B) { benchExisting(b, n, 0.5, false) })
		b.Run(fmt.Sprintf("nodes=%d/full", n), func(b *testing.B) { benchExisting(b, n, 1, false) })
		b.Run(fmt.Sprintf("nodes=%d/room-prepared", n), func(b *testing.B) { benchExisting(b, n, 0.5, true) })
	}
}
