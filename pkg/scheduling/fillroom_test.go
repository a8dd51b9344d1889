package scheduling_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// fillRoomInput: nine 1-cpu pods labelled my=x that must run in test-zone-1, one pod spreading
// my=x over hostnames (so no repack moves the nine: a hostname group counts them), and three
// small pods that must each have a node of their own. The catalog is linear, $0.10 a cpu:
// 4, 8 and 16 cpu. The placement loop puts the nine on one 16-cpu claim ($1.60) and the first
// small pod with them; the spread pod cannot join them and opens a 4-cpu claim, which the
// second small pod joins; the third opens a 4-cpu claim of its own, 3.9 cpu of it idle:
// $2.40/h. ownSpread makes the small pods spread my=x over hostnames too (labelled my=x), so
// that the nine may join none of them.
func fillRoomInput(ownSpread bool) *scheduling.Input {
	its := withoutOverhead(
		fake.InstanceType("c4", 4, 16, 110, 0.4),
		fake.InstanceType("c8", 8, 32, 110, 0.8),
		fake.InstanceType("c16", 16, 64, 110, 1.6),
	)
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my": "x"}},
		}}
	}
	var pods []*corev1.Pod
	for i := range 9 {
		p := fake.Pod("default", fmt.Sprintf("x%d", i), "1", "256Mi", map[string]string{"my": "x"})
		p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "test-zone-1"}
		pods = append(pods, p)
	}
	w := fake.Pod("default", "w", "100m", "100Mi", map[string]string{"my": "x"})
	spread(w)
	pods = append(pods, w)
	for i := range 3 {
		lbls := map[string]string{"app": "alone"}
		if ownSpread {
			lbls["my"] = "x"
		}
		p := fake.Pod("default", fmt.Sprintf("alone%d", i), "100m", "100Mi", lbls)
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "alone"}},
		}}}}
		if ownSpread {
			spread(p)
		}
		pods = append(pods, p)
	}
	return &scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}}, Options: scheduling.Options{Repack: true}}
}

// claimKinds names a claim's pods by the prefix of their names.
func claimKinds(c *scheduling.NewClaim) map[string]int {
	k := map[string]int{}
	for _, p := range c.Pods {
		k[strings.TrimRight(p.Name, "0123456789")]++
	}
	return k
}

// The idle room of a claim held by a pod that must be alone takes pods from a grown claim,
// which shrinks: the lone claim takes three of the nine, keeping them in test-zone-1, and the
// grown claim drops to 8 cpu: $1.60/h instead of $2.40/h. The claim of the spread pod takes
// none of the pods its group counts.
func TestFillRoomMovesPodsIntoTheIdleRoomOfLoneClaims(t *testing.T) {
	in := fillRoomInput(false)
	in.Options.Repack = false
	placed := scheduling.Solve(in)
	if math.Abs(placed.TotalPrice()-2.4) > 1e-9 || len(placed.NewClaims) != 3 {
		t.Fatalf("placement: %d claims for $%.2f/h, want 3 for $2.40/h (the premise of the test)", len(placed.NewClaims), placed.TotalPrice())
	}
	in.Options.Repack = true
	res := scheduling.Solve(in)
	if errs := check(in, res); len(errs) > 0 {
		t.Fatalf("violations:\n%s", strings.Join(errs, "\n"))
	}
	if len(res.PodErrors) > 0 || math.Abs(res.TotalPrice()-1.6) > 1e-9 || len(res.NewClaims) != 3 {
		t.Fatalf("filled: %d claims for $%.2f/h, %d pod errors; want 3 claims for $1.60/h", len(res.NewClaims), res.TotalPrice(), len(res.PodErrors))
	}
	var xs []int
	for _, c := range res.NewClaims {
		k := claimKinds(c)
		if k["w"] > 0 && k["x"] > 0 {
			t.Errorf("claim %s holds the spread pod and %d pods it counts", c.Hostname, k["x"])
		}
		if k["x"] == 0 {
			continue
		}
		xs = append(xs, k["x"])
		if z, ok := c.Requirements.Get(corev1.LabelTopologyZone); !ok || !z.Has("test-zone-1") || z.Len() != 1 {
			t.Errorf("claim %s holds pods of test-zone-1 but requires zone %v", c.Hostname, z)
		}
		if k["x"] == 3 && k["alone"] != 1 {
			t.Errorf("the three moved pods are on claim %s with %v, want the lone claim", c.Hostname, k)
		}
	}
	if slices.Sort(xs); !slices.Equal(xs, []int{3, 6}) {
		t.Errorf("the nine are on claims %v, want 3 moved beside a lone pod and 6 left", xs)
	}
}

// A pod that a hostname spread counts never joins a node where a pod of that spread sits:
// when every claim with room holds one, the grown claim keeps its nine pods.
func TestFillRoomKeepsPodsAwayFromTheSpreadThatCountsThem(t *testing.T) {
	in := fillRoomInput(true)
	res := scheduling.Solve(in)
	if errs := check(in, res); len(errs) > 0 {
		t.Fatalf("violations:\n%s", strings.Join(errs, "\n"))
	}
	if len(res.PodErrors) > 0 {
		t.Fatalf("%d pod errors", len(res.PodErrors))
	}
	for _, c := range res.NewClaims {
		k := claimKinds(c)
		if k["x"] > 0 && (k["w"] > 0 || k["alone"] > 0) {
			t.Errorf("claim %s holds %d pods my=x counts beside a pod spreading them: %v", c.Hostname, k["x"], k)
		}
		if k["x"] > 0 && k["x"] != 9 {
			t.Errorf("claim %s holds %d of the nine", c.Hostname, k["x"])
		}
	}
}
