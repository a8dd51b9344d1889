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
// a fleet therefore converges (each move lowers $/h by a finite step).
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

// decide tries sets of the candidates the budgets allow, at most
// RepackMaxNodes: in two orders, those leaving the most money idle first
// (price times the share of their fuller resource left unrequested), then
// multi-node consolidation's (cheapest to disrupt per dollar first); in each,
// windows of k consecutive nodes for k from the whole allowance halving down
// to two, the first repackWindows windows of each size. Idle money only
// orders the sets: a full node may still be of a dear shape for its pods. The
// first set whose repacking saves enough is the move.
func (m repackConsolidation) decide(p *pass) *Decision {
	byCost := p.allowedInOrder(m)
	if len(byCost) < 2 {
		return nil
	}
	byIdle := append([]*node(nil), byCost...)
	idle := make(map[*node]float64, len(byIdle))
	for _, n := range byIdle {
		idle[n] = n.idleCost()
	}
	sort.SliceStable(byIdle, func(i, j int) bool { return idle[byIdle[i]] > idle[byIdle[j]] })
	tried := map[string]bool{}
	for _, order := range [][]*node{byIdle, byCost} {
		for k := min(len(order), RepackMaxNodes); k >= 2; k /= 2 {
			for w, start := 0, 0; w < repackWindows && start+k <= len(order); w, start = w+1, start+k {
				set := order[start : start+k]
				key := strings.Join(names(set), ",")
				if tried[key] {
					continue
				}
				tried[key] = true
				if p.overWork() {
					p.timedOut(m)
					return nil
				}
				if d, _ := p.repack(m, set); d != nil {
					return d
				}
			}
		}
	}
	return nil
}

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

// allowedInOrder lists the consolidation candidates by disruption cost per
// dollar (then name), keeping in each NodePool only as many as its budget for
// m's reason allows.
func (p *pass) allowedInOrder(m Method) []*node {
	cands := append([]*node(nil), p.consolidationCandidates()...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].cost/cands[i].price, cands[j].cost/cands[j].price
		if a != b {
			return a < b
		}
		return cands[i].Name < cands[j].Name
	})
	left := map[string]int{}
	var allowed []*node
	for _, n := range cands {
		pool := n.pool.NodePool.Name
		if _, ok := left[pool]; !ok {
			left[pool] = p.budget(n, m.Reason()).Allowed
		}
		if left[pool] > 0 {
			left[pool]--
			allowed = append(allowed, n)
		}
	}
	return allowed
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
