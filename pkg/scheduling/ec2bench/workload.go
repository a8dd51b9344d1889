package ec2bench

import (
	"fmt"
	"math"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The workload's shape.
const (
	// Seed is the seed BenchmarkEC2Cost and the bench-vs-upstream dump generate from.
	Seed = 1
	// DeploymentCount Deployments of MinReplicas..MaxReplicas pods each (about
	// 1,000 pods in all).
	DeploymentCount = 60
	MinReplicas     = 2
	MaxReplicas     = 31
	// A Deployment's cpu request per pod is log-uniform in [MinMilliCPU, MaxMilliCPU].
	MinMilliCPU = 50
	MaxMilliCPU = 4000
	// Its memory request is the cpu request times a log-uniform ratio in
	// [MinGiBPerCore, MaxGiBPerCore] GiB per core.
	MinGiBPerCore = 0.5
	MaxGiBPerCore = 8.0
	// AntiAffinityEvery: in the anti-affinity variant every this many
	// Deployment (20% of them) requires its pods on different nodes.
	AntiAffinityEvery = 5
)

// Variant is one benchmark case: the pods' constraints and the NodePool's.
type Variant string

const (
	// Unconstrained: plain pods, on-demand amd64 nodes.
	Unconstrained Variant = "unconstrained"
	// AntiAffinity: every AntiAffinityEvery-th Deployment has required pod
	// anti-affinity on kubernetes.io/hostname against itself.
	AntiAffinity Variant = "hostname-anti-affinity"
	// ZonalSpread: every Deployment spreads over zones, maxSkew 1, DoNotSchedule.
	ZonalSpread Variant = "zonal-spread"
	// MultiArch: plain pods; the NodePool allows arm64 and amd64.
	MultiArch Variant = "arm64+amd64"
	// SpotOnDemand: plain pods; the NodePool allows spot and on-demand.
	SpotOnDemand Variant = "spot+on-demand"
)

// Variants are all variants, in the order the benchmark runs them.
func Variants() []Variant {
	return []Variant{Unconstrained, AntiAffinity, ZonalSpread, MultiArch, SpotOnDemand}
}

// Deployment is one generated Deployment: its pods' requests and constraints.
type Deployment struct {
	Name         string
	Replicas     int
	MilliCPU     int64
	MemoryBytes  int64
	AntiAffinity bool
	ZonalSpread  bool
}

// Deployments generates the variant's Deployments from seed. The requests and
// replica counts depend on the seed only, so every variant of a seed has the
// same pods and differs in constraints.
func Deployments(seed int64, v Variant) []Deployment {
	r := rand.New(rand.NewSource(seed))
	logUniform := func(lo, hi float64) float64 { return lo * math.Exp(r.Float64()*math.Log(hi/lo)) }
	out := make([]Deployment, DeploymentCount)
	for i := range out {
		milli := int64(math.Round(logUniform(MinMilliCPU, MaxMilliCPU)))
		gibPerCore := logUniform(MinGiBPerCore, MaxGiBPerCore)
		// Whole MiB, kept inside the ratio's range after rounding.
		mib := int64(math.Round(float64(milli) / 1000 * gibPerCore * 1024))
		mib = min(max(mib, int64(math.Ceil(float64(milli)/1000*MinGiBPerCore*1024))), int64(math.Floor(float64(milli)/1000*MaxGiBPerCore*1024)))
		out[i] = Deployment{
			Name:         fmt.Sprintf("deploy-%02d", i),
			Replicas:     MinReplicas + r.Intn(MaxReplicas-MinReplicas+1),
			MilliCPU:     milli,
			MemoryBytes:  mib << 20,
			AntiAffinity: v == AntiAffinity && i%AntiAffinityEvery == 0,
			ZonalSpread:  v == ZonalSpread,
		}
	}
	return out
}

// Pods generates the variant's pods from seed: each Deployment's replicas,
// labelled app=<deployment>.
func Pods(seed int64, v Variant) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, d := range Deployments(seed, v) {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.Name}}
		for j := 0; j < d.Replicas; j++ {
			name := fmt.Sprintf("%s-%d", d.Name, j)
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("default/" + name),
					Labels: map[string]string{"app": d.Name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewMilliQuantity(d.MilliCPU, resource.DecimalSI),
						corev1.ResourceMemory: *resource.NewQuantity(d.MemoryBytes, resource.BinarySI),
					},
				}}}},
			}
			if d.AntiAffinity {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						LabelSelector: sel, TopologyKey: corev1.LabelHostname,
					}},
				}}
			}
			if d.ZonalSpread {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
				}}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// NodePool is the getting-started NodePool over the catalog: instance
// categories c, m and r, generation above 2, linux, amd64 and on-demand; the
// MultiArch variant adds arm64, the SpotOnDemand variant spot. No limits.
func NodePool(v Variant, catalog []*scheduling.InstanceType) *scheduling.NodePool {
	arch := []string{"amd64"}
	if v == MultiArch {
		arch = []string{"amd64", "arm64"}
	}
	capacity := []string{"on-demand"}
	if v == SpotOnDemand {
		capacity = []string{"spot", "on-demand"}
	}
	return &scheduling.NodePool{
		Name: "default",
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "c", "m", "r"),
			scheduling.NewRequirement("karpenter.k8s.aws/instance-generation", corev1.NodeSelectorOpGt, "2"),
			scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
			scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch...),
			scheduling.NewRequirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, capacity...),
		),
		InstanceTypes: catalog,
	}
}
