package disruption_test

import (
	"math"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// shapedWorld is a fleet no upstream move improves: two general-purpose "m"
// nodes (8 cpu, 32Gi, 0.68/h), each holding a cpu-heavy pod (7 cpu, 1Gi) and
// a memory-heavy one (0.5 cpu, 28Gi). Neither node's pods fit a cheaper single
// node, and all four fit no single node; but a compute node "c" (8 cpu, 8Gi)
// holds a cpu-heavy pod and a memory node "r" (2 cpu, 32Gi) a memory-heavy
// one, each at 0.25/h: four new nodes for 1.00/h instead of 1.36/h.
func shapedWorld(t *testing.T, opts ...poolOpt) (*world, []*disruption.Node) {
	w := newWorld(t)
	w.pool("default", []*scheduling.InstanceType{
		itype("m", 8, 32, 0.68, 0),
		itype("c", 8, 8, 0.25, 0),
		itype("r", 2, 32, 0.25, 0),
	}, append([]poolOpt{onDemandOnly}, opts...)...)
	var ns []*disruption.Node
	for _, name := range []string{"a", "b"} {
		n := w.node(name, "default", "m")
		w.pod(n, name+"-cpu", "7", fixtures.WithRequests("memory", "768Mi"), labeled("app", "cpu"))
		w.pod(n, name+"-mem", "500m", fixtures.WithRequests("memory", "28Gi"), labeled("app", "mem"))
		ns = append(ns, n)
	}
	return w, ns
}

// TestRepackConsolidationReplacesNodesWithSeveralCheaperOnes: where upstream's
// consolidation (at most one replacement per move) has nothing to do, repack
// consolidation replaces both nodes with four cheaper ones shaped to the pods,
// each allowed only types that keep the move 5% cheaper, and says so.
func TestRepackConsolidationReplacesNodesWithSeveralCheaperOnes(t *testing.T) {
	w, _ := shapedWorld(t)
	r := w.run()
	d := r.Decision
	if d == nil || d.Method != disruption.MethodRepackConsolidation || d.Action() != disruption.ActionReplace {
		t.Fatalf("want a repack consolidation replace, got:\n%s", describe(r))
	}
	if got := strings.Join(d.CandidateNames(), ","); got != "a,b" {
		t.Fatalf("candidates %s, want a,b", got)
	}
	byType := map[string]int{}
	for _, c := range d.Replacements {
		for _, it := range c.InstanceTypes {
			if it.Name == "m" {
				t.Fatalf("a replacement may launch as m, which leaves the move no cheaper:\n%s", describe(r))
			}
		}
		byType[c.InstanceTypes[0].Name]++
	}
	if byType["c"] != 2 || byType["r"] != 2 || len(d.Replacements) != 4 {
		t.Fatalf("want two c and two r replacements, got %v:\n%s", byType, describe(r))
	}
	if math.Abs(d.CandidatesPrice-1.36) > 1e-9 || math.Abs(d.ReplacementsPrice-1.00) > 1e-9 {
		t.Fatalf("prices %.3f -> %.3f, want 1.36 -> 1.00", d.CandidatesPrice, d.ReplacementsPrice)
	}
	if !strings.Contains(d.Explanation, "repacking the pods of 2 nodes") || !strings.Contains(d.Explanation, "saves 0.36/h") {
		t.Fatalf("explanation %q", d.Explanation)
	}
	// The single-node method explained why it could not act on each node.
	for _, n := range []string{"a", "b"} {
		if e := explanation(r, n); e == nil || e.Method != disruption.MethodSingleNodeConsolidation {
			t.Fatalf("node %s: want single-node consolidation's explanation, got:\n%s", n, describe(r))
		}
	}
	if ok, why := disruption.Validate(w.in, d); !ok {
		t.Fatalf("an unchanged snapshot must validate: %s", why)
	}
}

// TestRepackConsolidationKeepsToTheRules: the budget, a PodDisruptionBudget,
// the option that turns the method off, and too small a saving each stop it.
func TestRepackConsolidationKeepsToTheRules(t *testing.T) {
	t.Run("budget of one node", func(t *testing.T) {
		w, _ := shapedWorld(t, budgetsOf(nodes("1")))
		if r := w.run(); r.Decision != nil {
			t.Fatalf("a move of two nodes exceeds a budget of one:\n%s", describe(r))
		}
	})
	t.Run("pdb", func(t *testing.T) {
		w, _ := shapedWorld(t)
		w.in.PDBs = append(w.in.PDBs, fixtures.PodDisruptionBudget("cpu", fixtures.WithMinAvailable(intstr.FromInt32(2)),
			fixtures.WithSelector(map[string]string{"app": "cpu"}), fixtures.WithPDBStatus(policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0})))
		if r := w.run(); r.Decision != nil {
			t.Fatalf("no pod of app=cpu may be evicted:\n%s", describe(r))
		}
	})
	t.Run("disabled", func(t *testing.T) {
		w, _ := shapedWorld(t)
		w.in.Options.DisableRepackConsolidation = true
		if r := w.run(); r.Decision != nil {
			t.Fatalf("DisableRepackConsolidation leaves upstream's moves only:\n%s", describe(r))
		}
	})
	t.Run("saving under the threshold", func(t *testing.T) {
		// At 0.33/h each, four nodes cost 1.32/h: 2.9% less than 1.36/h.
		w := newWorld(t)
		w.pool("default", []*scheduling.InstanceType{itype("m", 8, 32, 0.68, 0), itype("c", 8, 8, 0.33, 0), itype("r", 2, 32, 0.33, 0)}, onDemandOnly)
		for _, name := range []string{"a", "b"} {
			n := w.node(name, "default", "m")
			w.pod(n, name+"-cpu", "7", fixtures.WithRequests("memory", "768Mi"))
			w.pod(n, name+"-mem", "500m", fixtures.WithRequests("memory", "28Gi"))
		}
		if r := w.run(); r.Decision != nil {
			t.Fatalf("a move saving under %.0f%% is not worth its disruption:\n%s", 100*disruption.RepackMinSaving, describe(r))
		}
	})
}

// TestRepackConsolidationRevalidates: the decision holds on an unchanged
// snapshot and fails when the pods no longer fit what it decided.
func TestRepackConsolidationRevalidates(t *testing.T) {
	w, ns := shapedWorld(t)
	r := w.run()
	if r.Decision == nil || r.Decision.Method != disruption.MethodRepackConsolidation {
		t.Fatalf("got:\n%s", describe(r))
	}
	// A pod arrives on a: the candidates' pods now need a fifth node, and the move saves too little.
	w.pod(ns[0], "a-more", "1500m")
	if ok, why := disruption.Validate(w.in, r.Decision); ok {
		t.Fatalf("the decision must not hold once a's pods need more: %q", why)
	}
	// The pool's budget drops to zero.
	w, _ = shapedWorld(t)
	r = w.run()
	w.pools["default"].NodePool.Spec.Disruption.Budgets = []v1.Budget{nodes("0")}
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "budget") {
		t.Fatalf("ok=%v %q", ok, why)
	}
}

// TestRepackConsolidationLooksBeyondTheCheapestToDisrupt: with a budget of two
// nodes, the two nodes cheapest to disrupt per dollar are full compute nodes
// no move improves, while the shaped pair (whose pods carry a high deletion
// cost) is the one worth repacking. The sets come from every candidate within
// the budget, most idle money first, so the pair is found.
func TestRepackConsolidationLooksBeyondTheCheapestToDisrupt(t *testing.T) {
	w, ns := shapedWorld(t, budgetsOf(nodes("2")))
	for _, n := range ns {
		for _, p := range n.Existing.Pods {
			p.Annotations = map[string]string{disruption.PodDeletionCostAnnotation: "1000000000"}
		}
	}
	for _, name := range []string{"x", "y"} {
		w.pod(w.node(name, "default", "c"), name+"-full", "7500m", fixtures.WithRequests("memory", "768Mi"))
	}
	r := w.run()
	d := r.Decision
	if d == nil || d.Method != disruption.MethodRepackConsolidation {
		t.Fatalf("want a repack consolidation of a and b, got:\n%s", describe(r))
	}
	if got := strings.Join(d.CandidateNames(), ","); got != "a,b" {
		t.Fatalf("candidates %s, want a,b:\n%s", got, describe(r))
	}
}
