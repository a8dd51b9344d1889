package disruption_test

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The benchmark cluster: the KWOK provider's catalog (144 instance types in 4
// zones, on-demand and spot), three NodePools (general: amd64 on-demand+spot;
// arm: arm64 on-demand; batch: amd64 spot, tainted), default budgets of 10%,
// and nodes of 4, 8 and 16 cpu, half of them nearly full and half between a
// fifth and a half used. Pods belong to 40 deployments with requests from
// 250m/512Mi to 2/4Gi; one deployment in ten spreads across zones
// (DoNotSchedule), one in ten prefers to (ScheduleAnyway); every node runs one
// DaemonSet pod; a few PDBs allow one disruption each. Everything is seeded, so
// every run decides over the same cluster.

type benchCluster struct {
	in    *disruption.Input
	nodes int
	pods  int
}

func kwokTypes(b testing.TB) []*scheduling.InstanceType {
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		b.Fatal(err)
	}
	its, err := kwok.New(context.Background(), nil, clocktesting.NewFakeClock(now), catalog).GetInstanceTypes(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return its
}

type benchPool struct {
	name   string
	arch   string
	ct     []string
	taints []corev1.Taint
	share  float64
}

var benchPools = []benchPool{
	{name: "general", arch: "amd64", ct: []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot}, share: 0.6},
	{name: "arm", arch: "arm64", ct: []string{v1.CapacityTypeOnDemand}, share: 0.25},
	{name: "batch", arch: "amd64", ct: []string{v1.CapacityTypeSpot}, share: 0.15,
		taints: []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}},
}

type deployment struct {
	name   string
	cpu    int64 // milli
	memMi  int64
	pool   int
	spread corev1.UnsatisfiableConstraintAction // "" for none
}

// workload shapes the cluster.
type workload struct {
	// fullShare of the nodes are filled to 85-95% of their cpu, the others to 20-50%.
	fullShare float64
	// tight: every node is a c-family on-demand node filled with 3-cpu pods as
	// far as they go, leaving gaps too small for any pod and no cheaper type
	// able to hold a node's pods: nothing can be consolidated, and single-node
	// consolidation looks at every node.
	tight bool
	// podsPerNode, when set, puts exactly that many deployment pods on every
	// node (besides its DaemonSet pod), sized to reach the node's target use:
	// the scale benchmarks' "10 pods per node".
	podsPerNode int
}

func newBenchCluster(b testing.TB, n int, wl workload) *benchCluster {
	r := rand.New(rand.NewSource(42))
	its := kwokTypes(b)
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	in := &disruption.Input{Now: now, Scheduling: &scheduling.Input{}}
	for _, bp := range benchPools {
		np := &v1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: bp.name, UID: types.UID("uid-" + bp.name)},
			Spec: v1.NodePoolSpec{
				Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
					Taints: bp.taints,
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: bp.ct},
						{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{bp.arch}},
						{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
					},
				}},
				Disruption: v1.Disruption{
					ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
					ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
					Budgets:             []v1.Budget{{Nodes: "10%"}},
				},
			},
		}
		in.NodePools = append(in.NodePools, &disruption.NodePool{NodePool: np, InstanceTypes: its})
		var reqs []scheduling.Requirement
		for _, rq := range np.Spec.Template.Spec.Requirements {
			reqs = append(reqs, scheduling.NewRequirement(rq.Key, rq.Operator, rq.Values...))
		}
		in.Scheduling.NodePools = append(in.Scheduling.NodePools, &scheduling.NodePool{
			Name: bp.name, Requirements: scheduling.NewRequirements(reqs...), Taints: bp.taints, InstanceTypes: its})
	}
	in.Scheduling.Options.WellKnownLabels = append(append([]string(nil), scheduling.DefaultWellKnownLabels...), kwok.WellKnownLabels...)

	// Deployments: sizes vary, a fifth spread across zones.
	cpus := []int64{250, 500, 1000, 2000}
	var deps []deployment
	for i := 0; i < 40; i++ {
		d := deployment{name: fmt.Sprintf("app-%02d", i), cpu: cpus[r.Intn(len(cpus))], pool: i % len(benchPools)}
		d.memMi = d.cpu * 2 * 512 / 1000 * (1 + int64(r.Intn(2)))
		switch i % 10 {
		case 3:
			d.spread = corev1.DoNotSchedule
		case 7:
			d.spread = corev1.ScheduleAnyway
		}
		deps = append(deps, d)
		if i < 4 {
			in.PDBs = append(in.PDBs, &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: d.name},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}}},
				Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1},
			})
		}
	}
	ds := podOf("kube-system", "agent", "100m")
	ds.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	in.Scheduling.DaemonSetPods = []*corev1.Pod{ds}

	families := []string{"c", "s", "m"}
	sizes := []string{"4x", "8x", "16x"}
	podSeq := 0
	bc := &benchCluster{in: in, nodes: n}
	for i := 0; i < n; i++ {
		x := r.Float64()
		pi := 0
		for acc := benchPools[0].share; x > acc && pi < len(benchPools)-1; {
			pi++
			acc += benchPools[pi].share
		}
		bp := benchPools[pi]
		itName := fmt.Sprintf("%s-%s-%s-linux", families[r.Intn(3)], sizes[r.Intn(3)], bp.arch)
		it := byName[itName]
		ct := bp.ct[r.Intn(len(bp.ct))]
		if wl.tight {
			itName = fmt.Sprintf("c-%s-%s-linux", sizes[r.Intn(3)], bp.arch)
			it = byName[itName]
			ct = v1.CapacityTypeOnDemand
		}
		zone := kwok.Zones[r.Intn(len(kwok.Zones))]
		name := fmt.Sprintf("node-%05d", i)
		lbls := func() map[string]string {
			l := map[string]string{
				v1.NodePoolLabelKey: bp.name, corev1.LabelInstanceTypeStable: itName, corev1.LabelTopologyZone: zone,
				v1.CapacityTypeLabelKey: ct, corev1.LabelArchStable: bp.arch, corev1.LabelOSStable: "linux", corev1.LabelHostname: name,
			}
			for _, req := range it.Requirements.All() {
				if vals := req.Values(); len(vals) == 1 {
					l[req.Key] = vals[0]
				}
			}
			return l
		}
		k := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: lbls()},
			Spec:       corev1.NodeSpec{ProviderID: "kwok://" + name, Taints: bp.taints},
			Status: corev1.NodeStatus{Allocatable: it.Allocatable(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("nc-" + name), Labels: lbls(),
			CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))}}
		nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
		nc.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
		node := &disruption.Node{Name: name, Node: k, NodeClaim: nc, NodePool: bp.name, Initialized: true,
			Existing: &scheduling.ExistingNode{Name: name, Labels: k.Labels, Taints: k.Spec.Taints, Allocatable: k.Status.Allocatable, Initialized: true, NodePool: bp.name}}
		// Fill: the DaemonSet pod, then deployment pods up to the target share.
		agent := podOf("kube-system", "agent-"+name, "100m", daemonSetPod)
		agent.Spec.NodeName = name
		node.Existing.Pods = append(node.Existing.Pods, agent)
		alloc := it.Allocatable()
		capCPU, capMem := alloc.Cpu().MilliValue()-100, alloc.Memory().Value()
		target := 0.2 + r.Float64()*0.3
		if r.Float64() < wl.fullShare {
			target = 0.85 + r.Float64()*0.1
		}
		if wl.tight {
			target = 1
		}
		usedCPU, usedMem := int64(0), int64(0)
		for k := 0; k < wl.podsPerNode; k++ {
			d := deps[r.Intn(len(deps))]
			for d.pool != pi {
				d = deps[r.Intn(len(deps))]
			}
			cpu := int64(target*float64(capCPU)/float64(wl.podsPerNode)) / 50 * 50
			// memory: half the cpu share, so that cpu decides what fits
			mem := int64(target*float64(capMem)/float64(2*wl.podsPerNode)) >> 20 << 20
			podSeq++
			node.Existing.Pods = append(node.Existing.Pods, benchPod(d, podSeq, name, cpu, mem, bp))
			bc.pods++
		}
		for tries := 0; wl.podsPerNode == 0 && tries < 200 && float64(usedCPU) < target*float64(capCPU); tries++ {
			d := deps[r.Intn(len(deps))]
			if d.pool != pi {
				continue
			}
			if wl.tight {
				d.cpu, d.memMi, d.spread = 3000, 2048, ""
			}
			mem := d.memMi << 20
			if usedCPU+d.cpu > capCPU || usedMem+mem > capMem {
				continue
			}
			podSeq++
			node.Existing.Pods = append(node.Existing.Pods, benchPod(d, podSeq, name, d.cpu, mem, bp))
			usedCPU += d.cpu
			usedMem += mem
			bc.pods++
		}
		in.Nodes = append(in.Nodes, node)
	}
	return bc
}

// benchPod is a pod of deployment d bound to node.
func benchPod(d deployment, seq int, node string, cpu, mem int64, bp benchPool) *corev1.Pod {
	p := podOf("default", fmt.Sprintf("%s-%d", d.name, seq), "1")
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI)}
	p.Labels = map[string]string{"app": d.name}
	p.Spec.NodeName = node
	if bp.taints != nil {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	}
	p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: bp.name}
	if d.spread != "" {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: d.spread, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}}}}
	}
	return p
}

func benchmarkPass(b *testing.B, n int, wl workload) {
	bc := newBenchCluster(b, n, wl)
	if wl.tight {
		for _, np := range bc.in.Scheduling.NodePools {
			np.Requirements = np.Requirements.With(scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, scheduling.CapacityTypeOnDemand))
		}
	}
	b.ReportAllocs()
	// The set-up's garbage (a million pods at 100,000 nodes) is collected before
	// the clock starts, as BenchmarkScaleSolveExisting does: the figure is the
	// pass's own work and its own garbage, not the set-up's GC debt.
	runtime.GC()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	var r *disruption.Result
	for i := 0; i < b.N; i++ {
		r = disruption.Run(bc.in)
	}
	b.StopTimer()
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/pass")
	b.ReportMetric(float64(bc.pods), "pods")
	removed, decisions, replacements := 0, 0, 0
	if r.Decision != nil {
		decisions = 1
		removed = len(r.Decision.Candidates)
		replacements = len(r.Decision.Replacements)
	}
	b.ReportMetric(float64(removed), "nodes_removed")
	b.ReportMetric(float64(replacements), "replacements")
	b.ReportMetric(float64(decisions), "decisions")
	b.ReportMetric(float64(r.Simulations), "solves")
	b.ReportMetric(float64(len(r.Explanations)), "explained")
	method := "none"
	if r.Decision != nil {
		method = r.Decision.Method.String()
		b.Logf("%d nodes, %d pods: %s %s of %d node(s) (%.2f/h -> %.2f/h), %d solves, work %d, timed out %v",
			bc.nodes, bc.pods, method, r.Decision.Action(), removed, r.Decision.CandidatesPrice, r.Decision.ReplacementsPrice, r.Simulations, r.SimulationWork, r.TimedOut)
	} else {
		b.Logf("%d nodes, %d pods: no decision, %d explained, %d solves, work %d, timed out %v", bc.nodes, bc.pods, len(r.Explanations), r.Simulations, r.SimulationWork, r.TimedOut)
	}
}

// BenchmarkConsolidationPass is one full pass (emptiness, drift, multi-node,
// then single-node consolidation) over clusters of half-empty and full nodes.
func BenchmarkConsolidationPass(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkPass(b, n, workload{fullShare: 0.5}) })
	}
}

// BenchmarkConsolidationPassBusy: every node 85-95% used; consolidation still
// finds nodes whose pods fit in the others' gaps.
func BenchmarkConsolidationPassBusy(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkPass(b, n, workload{fullShare: 1}) })
	}
}

// BenchmarkConsolidationPassNothingToDo is the case upstream times out on:
// nothing can be consolidated, so single-node consolidation evaluates, and
// explains, every node.
func BenchmarkConsolidationPassNothingToDo(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkPass(b, n, workload{tight: true}) })
	}
}
