package disruption_test

import (
	"fmt"
	"syscall"
	"testing"
)

// Scale: EKS's ceiling is 100,000 nodes. BenchmarkScalePass is one full pass
// over 20,000, 50,000 and 100,000 nodes of the benchmark cluster with exactly
// ten deployment pods on each (plus its DaemonSet pod), half the nodes 85-95%
// used and half 20-50%. Run it with `make bench-scale`; the cluster alone
// takes about 2 GB at 100,000 nodes.
func BenchmarkScalePass(b *testing.B) {
	for _, n := range []int{20000, 50000, 100000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkPass(b, n, workload{fullShare: 0.5, podsPerNode: 10}) })
	}
}

// BenchmarkScalePassBusy: the same with every node 85-95% used, so fewer
// nodes can go and single-node consolidation looks at more of them.
func BenchmarkScalePassBusy(b *testing.B) {
	for _, n := range []int{20000, 50000, 100000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkPass(b, n, workload{fullShare: 1, podsPerNode: 10}) })
	}
}

// cpuSeconds is the process's CPU time (user+system), GC included: a figure
// other load on the shared machine disturbs less than wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
