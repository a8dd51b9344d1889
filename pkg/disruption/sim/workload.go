package sim

import (
	"fmt"
	"math"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// Deployment is one workload of the simulation: pods of one size whose
// count, per step, is Replicas[step].
type Deployment struct {
	Name string
	// CPU in millicores and Memory in MiB, per pod.
	CPU, MemoryMi int64
	// Pool is the NodePool its pods select.
	Pool string
	// Spread across zones, "" for none.
	Spread corev1.UnsatisfiableConstraintAction
	// DeletionCost is the pods' controller.kubernetes.io/pod-deletion-cost (0:
	// none). Disruption reads it as the pods' eviction cost, so Balanced sees a
	// node holding them as costlier to disrupt.
	DeletionCost int32
	// Replicas per step.
	Replicas []int
}

// podSizes are the requests a Deployment's pods are drawn from: cpu (milli)
// and memory (MiB), from small sidecar-like services to memory-heavy ones.
var podSizes = [][2]int64{
	{250, 512}, {500, 1024}, {500, 2048}, {1000, 2048}, {1000, 4096}, {2000, 4096}, {2000, 8192}, {3000, 6144},
}

// expensiveEviction is the pod-deletion-cost of the Deployments whose pods
// are costly to move (caches, stateful services): 2^29, which raises each
// pod's eviction cost from 1 to 5 (disruption's evictionCost adds cost/2^27).
const expensiveEviction = 1 << 29

// newWorkload draws the Deployments and their whole demand curve from the
// seed. Every Deployment follows a wave of period cfg.Period steps (a day)
// near a common phase, with its own depth, ±15% noise per step, and now and then a burst
// that doubles it for two steps. Drawing the curve up front keeps the demand
// independent of the policy under test.
func newWorkload(cfg Config) []*Deployment {
	r := rand.New(rand.NewSource(cfg.Seed))
	deps := make([]*Deployment, 0, cfg.Deployments)
	for i := 0; i < cfg.Deployments; i++ {
		size := podSizes[r.Intn(len(podSizes))]
		d := &Deployment{Name: fmt.Sprintf("app-%02d", i), CPU: size[0], MemoryMi: size[1], Pool: poolGeneral}
		// A quarter of the Deployments run as batch on the tainted spot pool.
		if i%4 == 3 {
			d.Pool = poolBatch
		}
		switch i % 8 {
		case 1:
			d.Spread = corev1.ScheduleAnyway
		case 5:
			d.Spread = corev1.DoNotSchedule
		}
		if i%3 == 2 {
			d.DeletionCost = expensiveEviction
		}
		base := float64(4 + r.Intn(cfg.MaxBaseReplicas-3))
		// Demand rises and falls together (a day's traffic), each Deployment
		// up to three hours off the common phase: scale-downs leave many
		// nodes half empty at once, which is when the policies differ.
		phase := (r.Float64() - 0.5) * 2 * math.Pi * 6 / float64(cfg.Period)
		depth := 0.3 + r.Float64()*0.5 // the trough is 20-70% of the peak
		burst := 0
		for t := 0; t < cfg.Steps; t++ {
			wave := 1 - depth*(1+math.Sin(2*math.Pi*float64(t)/float64(cfg.Period)+phase))/2
			n := base * wave * (0.85 + 0.3*r.Float64())
			if burst == 0 && r.Float64() < 0.04 {
				burst = 2
			}
			if burst > 0 {
				n *= 2
				burst--
			}
			d.Replicas = append(d.Replicas, max(1, int(math.Round(n))))
		}
		deps = append(deps, d)
	}
	return deps
}

// pod builds the seq-th pod of the Deployment, pending.
func (d *Deployment) pod(seq int, taints []corev1.Taint) *corev1.Pod {
	opts := []fixtures.PodOption{
		fixtures.WithLabels(map[string]string{"app": d.Name}),
		fixtures.WithUID(fmt.Sprintf("%s-%d", d.Name, seq)),
		fixtures.WithRequests("cpu", fmt.Sprintf("%dm", d.CPU), "memory", fmt.Sprintf("%dMi", d.MemoryMi)),
		fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: d.Name, UID: types.UID("rs-" + d.Name)}),
		fixtures.WithNodeSelector(map[string]string{labelNodePool: d.Pool}),
		fixtures.WithPhase(corev1.PodPending),
	}
	for _, t := range taints {
		opts = append(opts, fixtures.WithTolerations(corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect}))
	}
	if d.Spread != "" {
		opts = append(opts, fixtures.WithTopologySpread(corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: d.Spread,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.Name}},
		}))
	}
	if d.DeletionCost != 0 {
		opts = append(opts, fixtures.WithAnnotations(map[string]string{disruption.PodDeletionCostAnnotation: fmt.Sprint(d.DeletionCost)}))
	}
	return fixtures.Pod(fmt.Sprintf("%s-%d", d.Name, seq), opts...)
}
