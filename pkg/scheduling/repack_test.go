package scheduling_test

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// repackCatalog: a 16-cpu type at $4/h (0.25 a cpu) and a 4-cpu type at $0.60/h
// (0.15 a cpu). Twelve 1-cpu pods grow one claim to the 16-cpu type; four 4-cpu
// nodes hold them for $2.40.
func repackCatalog() ([]*scheduling.InstanceType, []*corev1.Pod) {
	its := withoutOverhead(fake.InstanceType("big", 16, 64, 110, 4), fake.InstanceType("small", 4, 16, 110, 0.6))
	var pods []*corev1.Pod
	for i := range 12 {
		pods = append(pods, fake.Pod("default", fmt.Sprintf("p%d", i), "1", "1Gi", nil))
	}
	return its, pods
}

// The placement loop grows one claim to the dear 16-cpu type; repacking moves its
// pods to the type the linear program prices cheapest, three to a node.
func TestRepackSplitsAGrownClaimIntoCheaperNodes(t *testing.T) {
	its, pods := repackCatalog()
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}}}
	placed := scheduling.Solve(in)
	if len(placed.NewClaims) != 1 || placed.NewClaims[0].InstanceTypes[0].Name != "big" {
		t.Fatalf("placement: %d claims, want one of type big", len(placed.NewClaims))
	}
	in.Options.Repack = true
	res := scheduling.Solve(in)
	if len(res.PodErrors) > 0 || len(res.NewClaims) != 3 {
		t.Fatalf("repacked: %d claims, %d pod errors; want 3 claims of type small", len(res.NewClaims), len(res.PodErrors))
	}
	n := 0
	for _, c := range res.NewClaims {
		if c.InstanceTypes[0].Name != "small" || c.Price != 0.6 {
			t.Errorf("claim %s priced %v on %s, want small at 0.6", c.Hostname, c.Price, c.InstanceTypes[0].Name)
		}
		n += len(c.Pods)
	}
	if n != len(pods) || res.TotalPrice() >= placed.TotalPrice() {
		t.Fatalf("repacked %d of %d pods for $%.2f/h, placed $%.2f/h", n, len(pods), res.TotalPrice(), placed.TotalPrice())
	}
}

// Repacking keeps to the NodePool's limits: with room for one node only, or with
// a cpu limit of 16 (what the one claim reserves; three claims would each reserve
// the largest type that holds their pods, 48 in all), the pods stay on one claim.
func TestRepackKeepsToTheNodePoolsLimits(t *testing.T) {
	for name, limit := range map[string]corev1.ResourceList{
		"nodes": {"nodes": resource.MustParse("1")},
		"cpu":   {corev1.ResourceCPU: resource.MustParse("16")},
	} {
		t.Run(name, func(t *testing.T) {
			its, pods := repackCatalog()
			in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its, Remaining: limit}},
				Options: scheduling.Options{Repack: true}}
			res := scheduling.Solve(in)
			if len(res.PodErrors) > 0 || len(res.NewClaims) != 1 {
				t.Fatalf("%d claims, %d pod errors; want the one placed claim", len(res.NewClaims), len(res.PodErrors))
			}
		})
	}
}

// Pods a hostname-keyed group counts stay where the placement loop put them: one
// per node for required anti-affinity, whatever repacking saves on the others.
func TestRepackLeavesHostnameAntiAffinityPodsOnePerNode(t *testing.T) {
	its, pods := repackCatalog()
	for i := range 3 {
		p := fake.Pod("default", fmt.Sprintf("anti%d", i), "1", "1Gi", map[string]string{"app": "anti"})
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
		}}}}
		pods = append(pods, p)
	}
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}}, Options: scheduling.Options{Repack: true}}
	res := scheduling.Solve(in)
	if len(res.PodErrors) > 0 {
		t.Fatalf("%d pod errors", len(res.PodErrors))
	}
	for _, c := range res.NewClaims {
		anti := 0
		for _, p := range c.Pods {
			if p.Labels["app"] == "anti" {
				anti++
			}
		}
		if anti > 1 {
			t.Errorf("claim %s holds %d anti-affinity pods", c.Hostname, anti)
		}
	}
}

// Repack's prices come from a covering program with size cuts: a 1Gi type with
// cheap cpu and a 1-cpu type with cheap memory hold none of the 1-cpu/4Gi pods,
// so they must not make the 4-cpu type look dear. Sixteen pods grow one claim
// to the 16-cpu type ($2.00/h); four 4-cpu nodes hold them for $1.60/h.
func TestRepackIgnoresTypesTooSmallForThePods(t *testing.T) {
	its := withoutOverhead(
		fake.InstanceType("tiny", 2, 1, 110, 0.02),
		fake.InstanceType("mem", 1, 16, 110, 0.16),
		fake.InstanceType("std", 4, 16, 110, 0.40),
		fake.InstanceType("big", 16, 64, 110, 2.0),
	)
	var pods []*corev1.Pod
	for i := range 16 {
		pods = append(pods, fake.Pod("default", fmt.Sprintf("p%d", i), "1", "4Gi", nil))
	}
	in := &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}}}
	if placed := scheduling.Solve(in); len(placed.NewClaims) != 1 || placed.NewClaims[0].Price != 2.0 {
		t.Fatalf("placement: %d claims for $%.2f/h, want one 16-cpu claim (the premise of the test)", len(placed.NewClaims), placed.TotalPrice())
	}
	in.Options.Repack = true
	res := scheduling.Solve(in)
	if errs := check(in, res); len(errs) > 0 {
		t.Fatalf("violations: %v", errs)
	}
	if len(res.PodErrors) > 0 || len(res.NewClaims) != 4 || math.Abs(res.TotalPrice()-1.6) > 1e-9 {
		t.Fatalf("repacked: %d claims for $%.2f/h, %d pod errors; want four 4-cpu nodes for $1.60/h", len(res.NewClaims), res.TotalPrice(), len(res.PodErrors))
	}
}
