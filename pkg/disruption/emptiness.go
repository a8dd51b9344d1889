package disruption

import (
	"fmt"
	"strings"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// MethodEmptiness deletes, in one command, every empty consolidatable node the
// budgets allow, whatever the NodePool's consolidation policy.
var MethodEmptiness Method = emptiness{}

type emptiness struct{}

func (emptiness) String() string              { return "emptiness" }
func (emptiness) Reason() v1.DisruptionReason { return v1.DisruptionReasonEmpty }
func (emptiness) ConsolidationType() string   { return "empty" }
func (emptiness) Validated() bool             { return true }
func (emptiness) Simulates() bool             { return false }
func (emptiness) Narrows() bool               { return false }
func (emptiness) graceful() bool              { return true }

// revalidate: the candidates are still empty and allowed; nothing else to check.
func (emptiness) revalidate(*pass, []*node, *Decision) (bool, string) { return true, "" }

// wants consolidatable nodes without reschedulable pods in NodePools that
// consolidate at all (consolidateAfter is not Never). A static NodePool's
// nodes stay, empty or not: their count is its spec.replicas.
func (emptiness) wants(n *node) (bool, *block) {
	d := &n.pool.NodePool.Spec.Disruption
	if n.consolidatable && n.empty() && n.pool.NodePool.Spec.Replicas != nil {
		return false, staticBlock(n)
	}
	return n.consolidatable && d.ConsolidateAfter.Duration != nil && n.empty(), nil
}

// staticBlock explains why consolidation leaves a static NodePool's node.
func staticBlock(n *node) *block {
	return &block{CodeConsolidationDisabled, fmt.Sprintf("nodepool %s is static: its node count is spec.replicas (%d), which only the user changes", n.pool.NodePool.Name, *n.pool.NodePool.Spec.Replicas)}
}

func (m emptiness) decide(p *pass) *Decision {
	left := map[string]int{}
	var chosen []*node
	for _, n := range p.candidates(m) {
		b := p.budget(n, m.Reason())
		if b.Allowed == 0 {
			p.explain(n, m, CodeBudget, b.Message)
			continue
		}
		pool := n.pool.NodePool.Name
		if _, ok := left[pool]; !ok {
			left[pool] = b.Allowed
		}
		if left[pool] == 0 {
			continue
		}
		left[pool]--
		chosen = append(chosen, n)
	}
	if len(chosen) == 0 {
		return nil
	}
	d := &Decision{Method: m, Candidates: nodesOf(chosen), CandidatesPrice: priceOf(chosen)}
	d.Explanation = fmt.Sprintf("deleting %d empty node(s): %s", len(chosen), strings.Join(names(chosen), ", "))
	return d
}
