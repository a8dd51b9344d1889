package scheduling_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// The workloads (fake.DiversePods, fake.PreferencePods, fake.BenchNodePool) reproduce
// upstream Karpenter's scheduling benchmark; hack/bench-vs-upstream.sh feeds the same input to
// upstream's solver.

func runBench(b *testing.B, pods []*corev1.Pod, policy scheduling.PreferencePolicy, cache *scheduling.Cache) {
	pool := fake.BenchNodePool()
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{pool}, Options: scheduling.Options{PreferencePolicy: policy, Repack: benchRepack}, Cache: cache}
	// The floor under any solve's $/h (scheduling.LowerBound), outside the timing.
	bound, err := scheduling.LowerBound(in)
	if err != nil {
		b.Fatal(err)
	}
	if cache != nil {
		scheduling.Solve(in) // warm the cache: measures steady-state solves against unchanged pools
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, faults0 := cpuSeconds(), minorFaults()
	var res *scheduling.Results
	for i := 0; i < b.N; i++ {
		res = scheduling.Solve(in)
	}
	b.StopTimer()
	cpu, faults := cpuSeconds()-cpu0, minorFaults()-faults0
	if len(res.PodErrors) > 0 {
		for p, err := range res.PodErrors {
			b.Fatalf("%d pods unschedulable, e.g. %s: %v", len(res.PodErrors), p.Name, err)
		}
	}
	secs := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(pods))/secs, "pods/sec")
	// CPU time of the whole process (GC included): a figure that other load on the machine
	// disturbs far less than wall-clock time.
	if cpu > 0 {
		b.ReportMetric(float64(len(pods))*float64(b.N)/cpu, "pods/cpu-sec")
	}
	// Page faults: a young process's solves land on heap pages never touched before, and on a
	// virtual machine a fault can cost more than the solve's own work.
	b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
	b.ReportMetric(float64(len(res.NewClaims)), "nodes")
	b.ReportMetric(res.TotalPrice(), "$/hour")
	b.ReportMetric(bound.PricePerHour, "bound-$/hour")
	if bound.PricePerHour > 0 {
		b.ReportMetric(res.TotalPrice()/bound.PricePerHour, "x-bound")
	}
}

// benchRepack is Options.Repack in the benchmarks: on, as provisioning solves;
// SCHEDULING_REPACK=0 measures placement alone.
var benchRepack = os.Getenv("SCHEDULING_REPACK") != "0"

func BenchmarkScheduling(b *testing.B) {
	for _, n := range []int{1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000} {
		pods := fake.DiversePods(n)
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBench(b, pods, scheduling.PreferencePolicyRespect, nil) })
	}
}

// BenchmarkSchedulingCached repeats the small sizes with a warm Cache, the situation of a
// provisioner or consolidation loop solving repeatedly against unchanged NodePools: a figure
// of its own, not the fresh-solve one (BenchmarkScheduling names no Cache).
func BenchmarkSchedulingCached(b *testing.B) {
	for _, n := range []int{1, 50, 100, 1000} {
		pods := fake.DiversePods(n)
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			runBench(b, pods, scheduling.PreferencePolicyRespect, scheduling.NewCache())
		})
	}
}

func BenchmarkPreferences(b *testing.B) {
	pods := fake.PreferencePods(4000)
	b.Run("respect", func(b *testing.B) { runBench(b, pods, scheduling.PreferencePolicyRespect, nil) })
	b.Run("ignore", func(b *testing.B) { runBench(b, pods, scheduling.PreferencePolicyIgnore, nil) })
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// minorFaults is the process's minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}
