package disruption_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var rsPod = fixtures.WithOwners(metav1.OwnerReference{Kind: "ReplicaSet", Name: "web-7c9", APIVersion: "apps/v1", Controller: ptr.To(true)})

func namesOf(ns []*disruption.Node) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// Nodes going away get the lowest cost; then drifted nodes, then the others
// by price per unit of disruption (highest first), within budgets; nodes
// disruption would not take (protected, pinned by a pod nothing recreates,
// in a pool that never consolidates, past the budget) are cleared.
func TestRankForDeletionCost(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes(), onDemandOnly, budgetsOf(nodes("3")))
	w.pool("never", standardTypes(), onDemandOnly, never)
	w.pod(w.node("gone", "default", "l", func(n *disruption.Node) { n.Deleting = true }), "a", "1", rsPod)
	w.pod(w.node("drifted", "default", "s", drifted(now)), "b", "1", rsPod)
	// l with one pod: 0.68/2; m with three: 0.34/4.
	w.pod(w.node("pricey", "default", "l"), "c", "1", rsPod)
	busy := w.node("busy", "default", "m")
	for _, name := range []string{"d", "e", "f"} {
		w.pod(busy, name, "100m", rsPod)
	}
	// Past the budget of 3 (drifted, pricey, busy come first).
	w.pod(w.node("over", "default", "s"), "g", "1", rsPod)
	w.pod(w.node("protected", "default", "l"), "h", "1", rsPod, podAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
	w.pod(w.node("pinned", "default", "l"), "bare", "1")
	w.pod(w.node("steady", "never", "l"), "i", "1", rsPod)

	r := disruption.RankForDeletionCost(w.in)
	if got := namesOf(r.GoingAway); !reflect.DeepEqual(got, []string{"gone"}) {
		t.Errorf("going away %v, want [gone]", got)
	}
	if got := namesOf(r.Ranked); !reflect.DeepEqual(got, []string{"drifted", "pricey", "busy"}) {
		t.Errorf("ranked %v, want [drifted pricey busy]", got)
	}
	cleared := map[string]bool{}
	for _, n := range r.Cleared {
		cleared[n.Name] = true
	}
	for _, want := range []string{"over", "protected", "pinned", "steady"} {
		if !cleared[want] {
			t.Errorf("%s not cleared (cleared: %v)", want, namesOf(r.Cleared))
		}
	}
	if disruption.DeletionCostRank(0, 3) != -3 || disruption.DeletionCostRank(2, 3) != -1 {
		t.Errorf("ranks %d..%d, want -3..-1", disruption.DeletionCostRank(0, 3), disruption.DeletionCostRank(2, 3))
	}
}

// With PodDeletionCostManagement on, the pod-deletion-cost Karpenter writes no
// longer weighs in consolidation's choice; karpenter.sh/disruption-cost does.
func TestDisruptionCostAnnotationsInConsolidationOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		managed bool
		ann     string
		want    string
	}{
		{"pod-deletion-cost read when unmanaged", false, "controller.kubernetes.io/pod-deletion-cost", "b"},
		{"pod-deletion-cost ignored when managed", true, "controller.kubernetes.io/pod-deletion-cost", "a"},
		{"karpenter.sh/disruption-cost always read", true, v1.DisruptionCostAnnotationKey, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.in.Options.PodDeletionCostManagement = tc.managed
			w.pool("default", standardTypes(), onDemandOnly)
			// Two equal nodes whose pods fit on a third; a's pod is made
			// expensive to evict, so b goes first unless the annotation is ignored.
			a := w.node("a", "default", "m")
			w.pod(a, "pa", "1", podAnnotated(tc.ann, "2000000000"))
			w.pod(w.node("b", "default", "m"), "pb", "1")
			w.pod(w.node("c", "default", "l"), "pc", "1", fixtures.WithAnnotations(map[string]string{v1.DoNotDisruptAnnotationKey: "true"}))
			r := w.run()
			if r.Decision == nil || len(r.Decision.Candidates) == 0 {
				t.Fatalf("no decision:\n%s", describe(r))
			}
			if got := r.Decision.Candidates[0].Name; got != tc.want {
				t.Fatalf("first candidate %s, want %s:\n%s", got, tc.want, describe(r))
			}
		})
	}
}
