package disruption

import (
	"sort"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// MethodSingleNodeConsolidation deletes one underutilized node whose pods fit
// elsewhere, or replaces it with one cheaper node (policy
// WhenEmptyOrUnderutilized); it explains every candidate it leaves.
var MethodSingleNodeConsolidation Method = singleNode{}

type singleNode struct{}

func (singleNode) String() string              { return "single_node_consolidation" }
func (singleNode) Reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (singleNode) ConsolidationType() string   { return "single" }
func (singleNode) Validated() bool             { return true }
func (singleNode) Simulates() bool             { return true }
func (singleNode) Narrows() bool               { return false }
func (singleNode) graceful() bool              { return true }

func (singleNode) wants(n *node) (bool, *block) { return wantsConsolidation(n) }

func (m singleNode) revalidate(p *pass, cands []*node, d *Decision) (bool, string) {
	return p.revalidateConsolidation(m, cands, d, false)
}

// decide tries each candidate alone, NodePools interleaved so that a large
// pool does not starve the others, cheapest to disrupt first; the first that
// can go is the decision.
func (m singleNode) decide(p *pass) *Decision {
	byPool := map[string][]*node{}
	var pools []string
	for _, n := range p.consolidationCandidates() {
		name := n.pool.NodePool.Name
		if _, ok := byPool[name]; !ok {
			pools = append(pools, name)
		}
		byPool[name] = append(byPool[name], n)
	}
	sort.Strings(pools)
	for _, name := range pools {
		l := byPool[name]
		sort.SliceStable(l, func(i, j int) bool {
			if l[i].cost != l[j].cost {
				return l[i].cost < l[j].cost
			}
			return l[i].Name < l[j].Name
		})
	}
	var order []*node
	for i := 0; ; i++ {
		added := false
		for _, name := range pools {
			if l := byPool[name]; i < len(l) {
				order = append(order, l[i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	for _, n := range order {
		if p.overWork() {
			p.timedOut(m)
			return nil
		}
		d, why := p.consolidate(m, []*node{n}, false)
		if d != nil {
			return d
		}
		p.explain(n, m, CodeUnconsolidatable, why)
	}
	return nil
}
