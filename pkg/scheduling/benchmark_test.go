package scheduling_test

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// The workload reproduces upstream Karpenter's scheduling benchmark: one NodePool with huge
// limits, 400 fake instance types, no existing nodes, and pods in five equal groups (plain,
// zonal spread, hostname spread, zonal self-affinity, hostname self-anti-affinity) with cpu
// from {100,250,500,1000,1500}m and memory from {100,256,512,1024,2048,4096}Mi, seeded rand(42).

func benchPool() *scheduling.NodePool {
	return &scheduling.NodePool{
		Name:          "default",
		InstanceTypes: fake.InstanceTypes(400),
		Remaining: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10000000"),
			corev1.ResourceMemory: resource.MustParse("10000000Gi"),
		},
	}
}

type podMaker struct {
	r *rand.Rand
	n int
}

func (m *podMaker) pod(lbls map[string]string) *corev1.Pod {
	cpus := []string{"100m", "250m", "500m", "1000m", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	m.n++
	return fake.Pod("default", fmt.Sprintf("pod-%d", m.n), cpus[m.r.Intn(len(cpus))], mems[m.r.Intn(len(mems))], lbls)
}

func (m *podMaker) value() string {
	vals := []string{"a", "b", "c", "d", "e", "f", "g"}
	return vals[m.r.Intn(len(vals))]
}

func makeDiversePods(count int) []*corev1.Pod {
	m := &podMaker{r: rand.New(rand.NewSource(42))}
	per := count / 5
	var pods []*corev1.Pod
	generic := func(n int) {
		for i := 0; i < n; i++ {
			pods = append(pods, m.pod(map[string]string{"my-label": m.value()}))
		}
	}
	generic(per)
	for _, key := range []string{scheduling.LabelZone, scheduling.LabelHostname} {
		for i := 0; i < per; i++ {
			l := map[string]string{"my-label": m.value()}
			p := m.pod(l)
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: l},
			}}
			pods = append(pods, p)
		}
	}
	for i := 0; i < per; i++ {
		l := map[string]string{"my-affinity": m.value()}
		p := m.pod(l)
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: scheduling.LabelZone,
		}}}}
		pods = append(pods, p)
	}
	for i := 0; i < per; i++ {
		l := map[string]string{"app": "nginx"}
		p := m.pod(l)
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: scheduling.LabelHostname,
		}}}}
		pods = append(pods, p)
	}
	generic(count - len(pods))
	return pods
}

// makePreferencePods: 4,000 pods each preferring a zone (satisfiable), with a weight-10 zonal
// anti-affinity preference against its own kind (unsatisfiable beyond three pods) and a
// weight-1 hostname anti-affinity preference.
func makePreferencePods(count int) []*corev1.Pod {
	m := &podMaker{r: rand.New(rand.NewSource(42))}
	var pods []*corev1.Pod
	for i := 0; i < count; i++ {
		l := map[string]string{"app": "pref"}
		p := m.pod(l)
		p.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"}}}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: scheduling.LabelZone}},
				{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: scheduling.LabelHostname}},
			}},
		}
		pods = append(pods, p)
	}
	return pods
}

func runBench(b *testing.B, pods []*corev1.Pod, policy scheduling.PreferencePolicy, cache *scheduling.Cache) {
	pool := benchPool()
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{pool}, Options: scheduling.Options{PreferencePolicy: policy}, Cache: cache}
	if cache != nil {
		scheduling.Solve(in) // warm the cache: measures steady-state solves against unchanged pools
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	var res *scheduling.Results
	for i := 0; i < b.N; i++ {
		res = scheduling.Solve(in)
	}
	b.StopTimer()
	cpu := cpuSeconds() - cpu0
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
	b.ReportMetric(float64(len(res.NewClaims)), "nodes")
	b.ReportMetric(res.TotalPrice(), "$/hour")
}

func BenchmarkScheduling(b *testing.B) {
	for _, n := range []int{1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000} {
		pods := makeDiversePods(n)
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBench(b, pods, scheduling.PreferencePolicyRespect, nil) })
	}
}

// BenchmarkSchedulingCached repeats the small sizes with a warm Cache, the situation of a
// provisioner or consolidation loop solving repeatedly against unchanged NodePools.
func BenchmarkSchedulingCached(b *testing.B) {
	for _, n := range []int{1, 50, 100, 1000} {
		pods := makeDiversePods(n)
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			runBench(b, pods, scheduling.PreferencePolicyRespect, scheduling.NewCache())
		})
	}
}

func BenchmarkPreferences(b *testing.B) {
	pods := makePreferencePods(4000)
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
