package fake

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The benchmark workloads reproduce upstream Karpenter's scheduling benchmark: one NodePool
// with huge limits, 400 fake instance types, no existing nodes. They live here rather than in
// a _test file so that hack/benchvsupstream can dump the very same input for upstream's solver.

// BenchNodePool is the benchmarks' NodePool: 400 instance types, limits that never bind.
func BenchNodePool() *scheduling.NodePool {
	return &scheduling.NodePool{
		Name:          "default",
		InstanceTypes: InstanceTypes(400),
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
	return Pod("default", fmt.Sprintf("pod-%d", m.n), cpus[m.r.Intn(len(cpus))], mems[m.r.Intn(len(mems))], lbls)
}

func (m *podMaker) value() string {
	vals := []string{"a", "b", "c", "d", "e", "f", "g"}
	return vals[m.r.Intn(len(vals))]
}

// DiversePods returns count pods in five equal groups (plain, zonal spread, hostname spread,
// zonal self-affinity, hostname self-anti-affinity) with cpu from {100,250,500,1000,1500}m and
// memory from {100,256,512,1024,2048,4096}Mi, seeded rand(42).
func DiversePods(count int) []*corev1.Pod {
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

// PreferencePods returns count pods each preferring a zone (satisfiable), with a weight-10
// zonal anti-affinity preference against its own kind (unsatisfiable beyond three pods) and a
// weight-1 hostname anti-affinity preference.
func PreferencePods(count int) []*corev1.Pod {
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
