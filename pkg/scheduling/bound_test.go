package scheduling_test

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// The bound is the linear program's optimum: with one type it is demand over
// capacity of the binding resource; with two it mixes them where that is
// cheaper than either alone.
func TestLowerBoundIsTheLPOptimum(t *testing.T) {
	one := fake.InstanceType("c4", 4, 64, 110, 1)
	pods := make([]*corev1.Pod, 10)
	for i := range pods {
		pods[i] = fake.Pod("default", fmt.Sprintf("p%d", i), "1", "100Mi", nil)
	}
	b, err := scheduling.LowerBound(&scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: []*scheduling.InstanceType{one}}}})
	if err != nil {
		t.Fatal(err)
	}
	// 10 cpu over 3.9 allocatable cpu (4 less 100m overhead) at $1 a node.
	if want := 10 / 3.9; !near(b.PricePerHour, want) || !near(b.Nodes, want) {
		t.Fatalf("bound %+v, want %.4f/h on %.4f nodes", b, want, want)
	}

	// A: 2 cpu, 16 Gi, $1; B: 8 cpu, 8 Gi, $2 (no overhead). Pods: 8 cpu, 16 Gi in all.
	// Alone, A costs $4 (cpu) and B $4 (memory); 4/7 A + 6/7 B covers both
	// exactly (2·4/7 + 8·6/7 = 8 cpu, 16·4/7 + 8·6/7 = 16 Gi) for $16/7.
	a, bb := fake.InstanceType("a", 2, 16, 110, 1), fake.InstanceType("b", 8, 8, 110, 2)
	a.Overhead, bb.Overhead = nil, nil
	mixed := make([]*corev1.Pod, 8)
	for i := range mixed {
		mixed[i] = fake.Pod("default", fmt.Sprintf("m%d", i), "1", "2Gi", nil)
	}
	b, err = scheduling.LowerBound(&scheduling.Input{Pods: mixed, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: []*scheduling.InstanceType{a, bb}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.PricePerHour, 16.0/7) || len(b.Mix) != 2 || !near(b.Nodes, 10.0/7) {
		t.Fatalf("bound %+v, want $%.4f/h from a mix of both types", b, 16.0/7)
	}
}

// Pods that each need a node of their own (required anti-affinity on the
// hostname against their own labels) raise the bound to that many nodes.
func TestLowerBoundCountsAntiAffinityNodes(t *testing.T) {
	it := fake.InstanceType("c4", 4, 64, 110, 1)
	var pods []*corev1.Pod
	for i := range 3 {
		p := fake.Pod("default", fmt.Sprintf("p%d", i), "100m", "100Mi", map[string]string{"app": "spread"})
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{affTerm(corev1.LabelHostname, sel("app", "spread"))}}}
		pods = append(pods, p)
	}
	b, err := scheduling.LowerBound(&scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: []*scheduling.InstanceType{it}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.PricePerHour, 3) {
		t.Fatalf("bound %+v, want 3 nodes at $1", b)
	}
}

// No solve launches for less than the bound: the benchmark workloads.
func TestLowerBoundIsBelowTheSolversPrice(t *testing.T) {
	for _, n := range []int{100, 1000, 5000} {
		in := &scheduling.Input{Pods: fake.DiversePods(n), NodePools: []*scheduling.NodePool{fake.BenchNodePool()}}
		b, err := scheduling.LowerBound(in)
		if err != nil {
			t.Fatal(err)
		}
		res := scheduling.Solve(in)
		if b.PricePerHour <= 0 || b.PricePerHour > res.TotalPrice()+1e-9 {
			t.Fatalf("%d pods: bound $%.2f/h, solve $%.2f/h: the bound must be positive and not above any solve", n, b.PricePerHour, res.TotalPrice())
		}
		t.Logf("%d pods: solve $%.2f/h on %d nodes, bound $%.2f/h (%.2f nodes): %.2fx", n, res.TotalPrice(), len(res.NewClaims), b.PricePerHour, b.Nodes, res.TotalPrice()/b.PricePerHour)
	}
}

// A node's capacity in the bound is net of the DaemonSet pods it runs: a
// daemon of 1 cpu on a 4-cpu type leaves 2.9 (of 3.9 allocatable) for pods.
func TestLowerBoundCountsDaemonSetOverhead(t *testing.T) {
	it := fake.InstanceType("c4", 4, 64, 110, 1)
	pods := make([]*corev1.Pod, 10)
	for i := range pods {
		pods[i] = fake.Pod("default", fmt.Sprintf("p%d", i), "1", "100Mi", nil)
	}
	ds := fake.Pod("kube-system", "agent", "1", "100Mi", nil)
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: []*scheduling.InstanceType{it}}}, DaemonSetPods: []*corev1.Pod{ds}}
	b, err := scheduling.LowerBound(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := 10 / 2.9; !near(b.PricePerHour, want) {
		t.Fatalf("bound $%.4f/h, want $%.4f/h (10 cpu over 2.9 left by the daemon)", b.PricePerHour, want)
	}
}

// Pods go only to the pools that admit them: pods selecting the dear pool are
// bounded by its type, not by the cheap pool's, whether or not other pods may
// use both pools; pools no pod spans are bounded apart and summed.
func TestLowerBoundKeepsPodsToTheirPools(t *testing.T) {
	cheap, dear := fake.InstanceType("cheap", 4, 64, 110, 1), fake.InstanceType("dear", 4, 64, 110, 3)
	cheap.Overhead, dear.Overhead = nil, nil
	pools := []*scheduling.NodePool{
		{Name: "cheap", InstanceTypes: []*scheduling.InstanceType{cheap}},
		{Name: "dear", InstanceTypes: []*scheduling.InstanceType{dear}},
	}
	var pods []*corev1.Pod
	for i := range 4 {
		p := fake.Pod("default", fmt.Sprintf("d%d", i), "1", "100Mi", nil)
		p.Spec.NodeSelector = map[string]string{scheduling.LabelNodePool: "dear"}
		pods = append(pods, p)
	}
	for i := range 8 {
		pods = append(pods, fake.Pod("default", fmt.Sprintf("c%d", i), "1", "100Mi", nil))
	}
	b, err := scheduling.LowerBound(&scheduling.Input{Pods: pods, NodePools: pools})
	if err != nil {
		t.Fatal(err)
	}
	// The pods without a selector may use both pools, so the pools form one
	// group of all 12 pods, bounded as one program; in it the 4 pods limited
	// to dear are covered by dear's nodes: 4 cpu there ($3), the other 8 at
	// the cheap rate ($2). Without that cut the program would price all 12
	// cpu at the cheap rate, $3.
	if !near(b.PricePerHour, 5) {
		t.Fatalf("joined pools: bound $%.4f/h, want $5", b.PricePerHour)
	}
	// Pods pinned to each pool: 4 cpu on dear ($3) plus 8 on cheap ($2).
	for _, p := range pods[4:] {
		p.Spec.NodeSelector = map[string]string{scheduling.LabelNodePool: "cheap"}
	}
	b, err = scheduling.LowerBound(&scheduling.Input{Pods: pods, NodePools: pools})
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.PricePerHour, 5) {
		t.Fatalf("pods pinned to their pools: bound $%.4f/h, want $5", b.PricePerHour)
	}
}

// A pod sits on one node, so the types too small for a pod cannot cover its
// requests: four pods of 1 cpu and 4Gi cannot buy their cpu on a 1Gi type and
// their memory on a 1-cpu one. Without the size cuts the program would pay
// $0.18/h (two tiny nodes and a share of the memory type); the pods need the
// 4-cpu type's $0.40/h, and one such node holds them all.
func TestLowerBoundKeepsEachPodOnATypeThatHoldsIt(t *testing.T) {
	its := withoutOverhead(
		fake.InstanceType("tiny", 2, 1, 110, 0.02),
		fake.InstanceType("mem", 1, 16, 110, 0.16),
		fake.InstanceType("std", 4, 16, 110, 0.40),
	)
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, fake.Pod("default", fmt.Sprintf("p%d", i), "1", "4Gi", nil))
	}
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}}}
	b, err := scheduling.LowerBound(in)
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.PricePerHour, 0.40) {
		t.Fatalf("bound $%.4f/h (mix %+v), want $0.40/h", b.PricePerHour, b.Mix)
	}
	if res := scheduling.Solve(in); len(res.PodErrors) > 0 || res.TotalPrice() < b.PricePerHour-1e-9 {
		t.Fatalf("solver $%.4f/h with %d errors, below or beside the bound $%.4f/h", res.TotalPrice(), len(res.PodErrors), b.PricePerHour)
	}
}

// Pods that must each have a node of their own cost at least their cheapest
// fitting types summed: two 1.5-cpu and two 6-cpu pods under hostname
// anti-affinity need two 2-cpu nodes and two 8-cpu ones, $1.20/h, where the
// covering program with its node-count cut shares capacity out to $1.10/h.
// A preferred term counts the same under PreferencePolicy Respect (a new node
// always honours it) and not under Ignore ($0.75/h: two 8-cpu nodes' worth).
func TestLowerBoundPricesPodsThatMustBeAlone(t *testing.T) {
	its := withoutOverhead(
		fake.InstanceType("one", 2, 4, 110, 0.2),
		fake.InstanceType("big", 8, 16, 110, 0.4),
	)
	pods := func(required bool) []*corev1.Pod {
		var out []*corev1.Pod
		for i, cpu := range []string{"1500m", "1500m", "6", "6"} {
			p := fake.Pod("default", fmt.Sprintf("p%d", i), cpu, "1Gi", map[string]string{"app": "alone"})
			term := corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "alone"}}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
			if required {
				p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
			} else {
				p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}
			}
			out = append(out, p)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		required bool
		policy   scheduling.PreferencePolicy
		want     float64
	}{
		{"required", true, scheduling.PreferencePolicyRespect, 1.2},
		{"preferred, respected", false, scheduling.PreferencePolicyRespect, 1.2},
		{"preferred, ignored", false, scheduling.PreferencePolicyIgnore, 0.75},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &scheduling.Input{Pods: pods(c.required), NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}},
				Options: scheduling.Options{PreferencePolicy: c.policy}}
			b, err := scheduling.LowerBound(in)
			if err != nil {
				t.Fatal(err)
			}
			if !near(b.PricePerHour, c.want) {
				t.Fatalf("bound $%.4f/h, want $%.2f/h", b.PricePerHour, c.want)
			}
			if res := scheduling.Solve(in); len(res.PodErrors) > 0 || res.TotalPrice() < b.PricePerHour-1e-9 {
				t.Fatalf("solver $%.4f/h with %d errors, below the bound $%.4f/h", res.TotalPrice(), len(res.PodErrors), b.PricePerHour)
			}
		})
	}
}
