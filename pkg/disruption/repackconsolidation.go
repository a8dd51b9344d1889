package disruption

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// MethodRepackConsolidation replaces several underutilized nodes with several
// new ones that cost less together (policy WhenEmptyOrUnderutilized). It comes
// after upstream's methods and acts only when none of them does: multi-node
// consolidation replaces a set of nodes with at most one node, single-node
// consolidation one node with one, and a fleet grown by churn (pods scaled
// down here and up there, each node sized for what arrived with it) often has
// no such move left while a fresh placement of the same pods would cost much
// less. This method re-solves the pods of the least valuable nodes the
// budgets allow with the provisioner's repacking solver (scheduling
// Options.Repack): onto the other nodes first, the rest onto new nodes whose
// sizes and families suit the pods together.
//
// A move is taken only when every instance type its replacements may launch
// keeps it at least RepackMinSaving cheaper than the candidates, so that no
// launch outcome turns it into a loss and each move pays for its disruption;
// a fleet therefore converges (each move lowers $/h by a finite step). That
// holds only if the evicted pods land where the move planned: a move whose
// pods, sent to the emptiest nodes first as kube-scheduler does, would leave
// one without room is refused (scatterFailure), since that pod's new node
// would undo the saving and invite the same move again.
var MethodRepackConsolidation Method = repackConsolidation{}

// RepackMinSaving is the least share of the candidates' $/h a repack move
// saves, whichever of the allowed instance types its replacements launch as.
const RepackMinSaving = 0.05

type repackConsolidation struct{}

func (repackConsolidation) String() string              { return "repack_consolidation" }
func (repackConsolidation) Reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (repackConsolidation) ConsolidationType() string   { return "repack" }
func (repackConsolidation) Validated() bool             { return true }
func (repackConsolidation) Simulates() bool             { return true }
func (repackConsolidation) Narrows() bool               { return false }
func (repackConsolidation) graceful() bool              { return true }

func (repackConsolidation) wants(n *node) (bool, *block) { return wantsConsolidation(n) }

// revalidate repacks the candidates again: the move must still save as much,
// need no more new nodes than decided, and launch only types decided.
func (m repackConsolidation) revalidate(p *pass, cands []*node, d *Decision) (bool, string) {
	again, why := p.repack(m, cands)
	if again == nil {
		return false, why
	}
	if again.Action() != d.Action() {
		return false, fmt.Sprintf("the decision changed from %s to %s", d.Action(), again.Action())
	}
	if len(again.Replacements) > len(d.Replacements) {
		return false, fmt.Sprintf("the pods would now need %d new nodes, not %d", len(again.Replacements), len(d.Replacements))
	}
	if it := undecidedType(d, again); it != "" {
		return false, fmt.Sprintf("the replacements would now need instance type %s, not among those decided", it)
	}
	return true, ""
}

// RepackMaxNodes bounds the nodes one repack move disrupts: a move re-solves
// their pods, and a pass in a large cluster where no other method acts must
// stay quick (each move is repeated once its replacements are up).
const RepackMaxNodes = 50

// decide tries sets of the consolidation candidates (the RepackMaxNodes
// cheapest to disrupt per dollar), each within every NodePool's budget: in
// two orders, those leaving the most money idle first (price times the share
// of their fuller resource left unrequested), then multi-node consolidation's
// (cheapest to disrupt per dollar first); in each, windows of k nodes for k
// from the whole allowance halving down to two, the first repackWindows
// windows of each size, a window taking the next nodes of the order its pools'
// budgets still allow. Where the candidates are few (repackPairsUpTo), every
// pair is tried too: a pair of nodes of a dear shape for their pods is often
// the only move left, and which pair is not told by either order. Idle money
// only orders the sets: a full node may still be of a dear shape for its pods.
// The first set whose repacking saves enough is the move.
func (m repackConsolidation) decide(p *pass) *Decision {
	if len(p.consolidationCandidates()) < 2 {
		return nil
	}
	byCost := p.byDisruptionCost()
	if len(byCost) > RepackMaxNodes {
		byCost = byCost[:RepackMaxNodes]
	}
	allowed := map[string]int{}
	total := 0
	for _, n := range byCost {
		pool := n.pool.NodePool.Name
		if _, ok := allowed[pool]; !ok {
			allowed[pool] = p.budget(n, m.Reason()).Allowed
			total += allowed[pool]
		}
	}
	byIdle := append([]*node(nil), byCost...)
	idle := make(map[*node]float64, len(byIdle))
	for _, n := range byIdle {
		idle[n] = n.idleCost()
	}
	sort.SliceStable(byIdle, func(i, j int) bool { return idle[byIdle[i]] > idle[byIdle[j]] })
	tried := map[string]bool{}
	try := func(set []*node) (*Decision, bool) {
		key := strings.Join(names(set), ",")
		if tried[key] {
			return nil, false
		}
		tried[key] = true
		if p.overWork() {
			p.timedOut(m)
			return nil, true
		}
		d, _ := p.repack(m, set)
		return d, d != nil
	}
	for _, order := range [][]*node{byIdle, byCost} {
		for k := min(len(order), total, RepackMaxNodes); k >= 2; k /= 2 {
			used := make([]bool, len(order))
			for w := 0; w < repackWindows; w++ {
				set := window(order, used, k, allowed)
				if len(set) < k {
					break
				}
				if d, stop := try(set); stop {
					return d
				}
			}
		}
	}
	if len(byIdle) <= repackPairsUpTo {
		for i := range byIdle {
			for j := i + 1; j < len(byIdle); j++ {
				a, b := byIdle[i], byIdle[j]
				if a.pool.NodePool.Name == b.pool.NodePool.Name && allowed[a.pool.NodePool.Name] < 2 {
					continue
				}
				if d, stop := try([]*node{a, b}); stop {
					return d
				}
			}
		}
	}
	return nil
}

// window takes, in order, the next k nodes not used yet whose NodePools'
// budgets (allowed, by pool) still have room in the window, and marks them
// used; fewer when the order runs out.
func window(order []*node, used []bool, k int, allowed map[string]int) []*node {
	set := make([]*node, 0, k)
	in := map[string]int{}
	for i, n := range order {
		if len(set) == k {
			break
		}
		pool := n.pool.NodePool.Name
		if used[i] || in[pool] >= allowed[pool] {
			continue
		}
		used[i] = true
		in[pool]++
		set = append(set, n)
	}
	return set
}

// repackPairsUpTo: with at most this many candidates a pass also tries every
// pair of them (66 sets at 12).
const repackPairsUpTo = 12

// repackWindows bounds the sets of one size a pass tries in one order.
const repackWindows = 4

// idleCost is the $/h of the node left unrequested: its price times the share
// of its fuller resource (cpu or memory) its pods do not request.
func (n *node) idleCost() float64 {
	if n.Existing == nil {
		return 0
	}
	resources := [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	var req [len(resources)]float64
	for _, pod := range n.Existing.Pods {
		if active(pod) {
			rs := requestsView(pod)
			for i, r := range resources {
				q := rs[r]
				req[i] += q.AsApproximateFloat64()
			}
		}
	}
	used := 0.0
	for i, r := range resources {
		if a, ok := n.Existing.Allocatable[r]; ok && !a.IsZero() {
			used = math.Max(used, req[i]/a.AsApproximateFloat64())
		}
	}
	return n.price * math.Max(0, 1-used)
}

// repack simulates the candidates gone with the repacking solver and returns
// the move when it saves RepackMinSaving of their price, or why not.
func (p *pass) repack(m Method, cands []*node) (*Decision, string) {
	price := priceOf(cands)
	allSpot := allOnSpot(cands)
	if allSpot && !p.in.Options.SpotToSpotConsolidation && p.everyPoolAllowsSpot() {
		return nil, "SpotToSpotConsolidation is disabled, so spot nodes cannot be replaced with spot nodes"
	}
	p.repacking = true
	sim, why := p.simulate(cands, nil)
	p.repacking = false
	if sim == nil {
		return nil, why
	}
	if !sim.ok {
		return nil, fmt.Sprintf("the pods of %d nodes cannot all be rescheduled: %v", len(cands), sim.err)
	}
	if why := scatterFailure(sim); why != "" {
		return nil, fmt.Sprintf("repacking the pods of %d nodes holds only if they land as planned: %s", len(cands), why)
	}
	newPrice := 0.0
	for _, c := range sim.replacements {
		newPrice += c.Price
	}
	// What the replacements may cost beyond their cheapest types, in total,
	// with the move still saving RepackMinSaving.
	allowance := price*(1-RepackMinSaving) - newPrice
	if allowance < 0 {
		return nil, fmt.Sprintf("repacking the pods of %d nodes (%s) costs %s: saves less than %.0f%%",
			len(cands), FormatPrice(price), FormatPrice(newPrice), 100*RepackMinSaving)
	}
	d := &Decision{Method: m, Candidates: nodesOf(cands), CandidatesPrice: price}
	if len(sim.replacements) == 0 {
		d.Explanation = fmt.Sprintf("the pods of %d nodes (%s) fit on other nodes: deleting them saves %s", len(cands), joinNames(cands), FormatPrice(price))
		return p.scored(d, cands, true)
	}
	slack := allowance / float64(len(sim.replacements))
	for _, c := range sim.replacements {
		// Each replacement keeps the types within its share of the allowance;
		// the spot rules are single-node consolidation's (cheaperReplacement).
		claim, why := p.cheaperReplacement(c, cands, c.Price+slack+1e-9, allSpot, false)
		if claim == nil {
			return nil, why
		}
		d.Replacements = append(d.Replacements, claim)
	}
	worst := 0.0
	for _, c := range d.Replacements {
		d.ReplacementsPrice += c.Price
		hi := 0.0
		for _, it := range c.InstanceTypes {
			if pr, ok := offeringPrice(it, c.Requirements); ok {
				hi = math.Max(hi, pr)
			}
		}
		worst += hi
	}
	d.Explanation = fmt.Sprintf("repacking the pods of %d nodes (%s, %s) onto other nodes and %s: %s, saves %s (at least %s)",
		len(cands), joinNames(cands), FormatPrice(price), describeClaims(d.Replacements), FormatPrice(d.ReplacementsPrice),
		FormatPrice(price-d.ReplacementsPrice), FormatPrice(price-worst))
	return p.scored(d, cands, true)
}
