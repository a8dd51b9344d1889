package scheduling_test

import (
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// TestPreparedSetSolvesAsFresh solves many questions against one prepared set, as a disruption
// pass does (each with some nodes left out, some nodes not in the set, a node listed twice, a
// changed copy of a set node), and checks every result against a solve without the set. The
// questions run in sequence on one set, so that caches the set fills for one question (label
// index, shapes) are read by the next ones.
func TestPreparedSetSolvesAsFresh(t *testing.T) {
	daemon := fake.Pod("kube-system", "ds", "100m", "128Mi", map[string]string{"ds": "yes"})
	daemon.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	all := mixedExisting(300)
	set := scheduling.PrepareExisting(all)
	outside := mixedExisting(320)[300:] // same generator: names that sort among the others
	for i, n := range outside {
		n.Name += "-outside"
		n.Labels[scheduling.LabelHostname] = n.Name
		outside[i] = n
	}
	r := rand.New(rand.NewSource(3))
	pools := [][]*scheduling.NodePool{{fake.BenchNodePool()}, nil}
	for q := 0; q < 24; q++ {
		var shown []*scheduling.ExistingNode
		keep := []float64{1, 0.9, 0.5, 0.1}[q%4]
		for _, n := range all {
			if r.Float64() < keep {
				shown = append(shown, n)
			}
		}
		switch q % 6 {
		case 1:
			shown = append(shown, outside...)
		case 2:
			if len(shown) > 0 {
				shown = append(shown, shown[0]) // listed twice
			}
		case 3:
			if len(shown) > 1 { // a changed copy replaces a set node
				c := *shown[1]
				c.Allocatable = corev1.ResourceList{corev1.ResourceCPU: c.Allocatable[corev1.ResourceCPU]}
				shown[1] = &c
			}
		}
		r.Shuffle(len(shown), func(i, j int) { shown[i], shown[j] = shown[j], shown[i] })
		pending := mixedPending(60 + 40*(q%5))
		base := scheduling.Input{Pods: pending, DaemonSetPods: []*corev1.Pod{daemon}, NodePools: pools[q%2], ExistingNodes: shown}
		want := digest(scheduling.Solve(&base))
		with := base
		with.Prepared = set
		if got := digest(scheduling.Solve(&with)); got != want {
			t.Errorf("question %d (%d nodes shown): prepared digest %s, fresh %s", q, len(shown), got, want)
		}
	}
}
