package disruption

import (
	"sort"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// MethodMultiNodeConsolidation deletes several underutilized nodes together,
// or replaces them with one node cheaper than all of them and not of one of
// their instance types (policy WhenEmptyOrUnderutilized).
var MethodMultiNodeConsolidation Method = multiNode{}

type multiNode struct{}

func (multiNode) String() string              { return "multi_node_consolidation" }
func (multiNode) Reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (multiNode) ConsolidationType() string   { return "multi" }
func (multiNode) Validated() bool             { return true }
func (multiNode) Simulates() bool             { return true }
func (multiNode) Narrows() bool               { return true }
func (multiNode) graceful() bool              { return true }

func (multiNode) wants(n *node) (bool, *block) { return wantsConsolidation(n) }

func (m multiNode) revalidate(p *pass, cands []*node, d *Decision) (bool, string) {
	return p.revalidateConsolidation(m, cands, d, true)
}

// decide looks for the longest prefix of candidates (cheapest to disrupt per
// dollar first) that can go together, replaced by at most one cheaper node. A
// binary search with the packer's optimistic answer finds the largest
// plausible prefix without solving; solves then confirm it, or search below it.
func (m multiNode) decide(p *pass) *Decision {
	allowed := p.allowedInOrder(m)
	if len(allowed) < 2 {
		return nil
	}
	plausible := func(k int) bool {
		prefix := allowed[:k]
		price := priceOf(prefix)
		packed := p.packWithout(prefix)
		var left []*podReq
		for _, u := range packed.unplaced {
			if packed.moving[u.pod] {
				left = append(left, u)
			}
		}
		if len(left) == 0 {
			return true
		}
		o, ok, _ := p.replacementBound(left)
		return ok && o.price < price
	}
	// The whole allowed prefix first: in a large cluster the budget, not room,
	// usually binds, and one packing then answers what the binary search would
	// need a dozen for. Otherwise search below it.
	lo, hi, best := 2, len(allowed)-1, 0
	if plausible(len(allowed)) {
		best, lo = len(allowed), len(allowed)+1
	}
	for lo <= hi {
		mid := (lo + hi) / 2
		if plausible(mid) {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best == 0 {
		return nil
	}
	if d, _ := p.consolidate(m, allowed[:best], true); d != nil {
		return d
	}
	// The solver disagreed with the packer (topology, ports, volumes...):
	// search the shorter prefixes with solves.
	var found *Decision
	lo, hi = 2, best-1
	for lo <= hi {
		if p.overWork() {
			p.timedOut(m)
			break
		}
		mid := (lo + hi) / 2
		if d, _ := p.consolidate(m, allowed[:mid], true); d != nil {
			found, lo = d, mid+1
		} else {
			hi = mid - 1
		}
	}
	return found
}

// byDisruptionCost is a copy of the consolidation candidates ordered by
// disruption cost per dollar, then name: multi-node and repack consolidation
// take their candidates in this order.
func (p *pass) byDisruptionCost() []*node {
	cands := append([]*node(nil), p.consolidationCandidates()...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].cost/cands[i].price, cands[j].cost/cands[j].price
		if a != b {
			return a < b
		}
		return cands[i].Name < cands[j].Name
	})
	return cands
}

// allowedInOrder lists the consolidation candidates by disruption cost per
// dollar (then name), keeping in each NodePool only as many as its budget for
// m's reason allows.
func (p *pass) allowedInOrder(m Method) []*node {
	cands := p.byDisruptionCost()
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
