package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// TestPlacementAdmitsWhatSolvePlaces: over generated snapshots, every pod Solve puts on an
// existing node is one Placement admits there, with its host ports free given the pods Solve
// put there before it, so a packer built on Placement never rules out a placement Solve makes.
// And every pod Placement finds no topology constraint for is one whose spec has none in force.
func TestPlacementAdmitsWhatSolvePlaces(t *testing.T) {
	checked := 0
	for seed := int64(0); seed < 1000; seed++ {
		in := genInput(seed)
		res := scheduling.Solve(in)
		pl := scheduling.NewPlacement(in)
		for _, p := range res.ExistingNodes {
			n := pl.Node(p.Node)
			var placed []*scheduling.PodPlacement
			for _, pod := range p.Pods {
				pp := pl.Pod(pod)
				if !pp.Admits(n) {
					t.Fatalf("seed %d: Solve put %s on %s, which Placement does not admit", seed, pod.Name, p.Node.Name)
				}
				if !pp.PortsFree(n, placed) {
					t.Fatalf("seed %d: Solve put %s on %s, where Placement finds its host ports taken", seed, pod.Name, p.Node.Name)
				}
				placed = append(placed, pp)
				checked++
			}
		}
		for _, pod := range in.Pods {
			if len(pl.Pod(pod).Topology()) == 0 && hasTopology(pod, in.Options.PreferencePolicy) {
				t.Fatalf("seed %d: %s has topology constraints Placement does not list", seed, pod.Name)
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d placements on existing nodes checked", checked)
	}
	t.Logf("%d placements on existing nodes checked", checked)
}

func hasTopology(pod *corev1.Pod, policy scheduling.PreferencePolicy) bool {
	respect := policy != scheduling.PreferencePolicyIgnore
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if respect || c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	if a.PodAffinity != nil && (len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || respect && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
		return true
	}
	return a.PodAntiAffinity != nil && (len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || respect && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
}
