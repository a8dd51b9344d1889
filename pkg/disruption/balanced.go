package disruption

import (
	"fmt"
	"math"
	"sort"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Balanced consolidation (consolidationPolicy: Balanced), as upstream v1.15
// scores it: a move (a delete or a replace) found for a Balanced NodePool's
// nodes goes ahead only when the share of the pool's cost it saves is at least
// 1/k of the share of the pool's disruption it causes (k = v1.BalancedK = 2):
//
//	score = (savings / pool cost) / (disruption / pool disruption) >= 1/k
//
// A node's disruption is 1 plus the eviction cost of each pod it moves
// (negative costs count as 0); the pool's is the sum over all its nodes, and
// its cost the sum of all its nodes' prices. A move spanning several pools
// gives each pool the share of the savings its candidates' prices make, and is
// taken only when every Balanced pool approves. Empty nodes are emptiness's,
// whatever the policy.

// Score is one NodePool's score of a consolidation move.
type Score struct {
	NodePool string
	Policy   v1.ConsolidationPolicy
	// Scored: the pool is Balanced; other pools' moves are not scored.
	Scored bool
	// SavingsFraction is the pool's savings over its cost per hour,
	// DisruptionFraction the move's disruption of it over the pool's.
	SavingsFraction, DisruptionFraction float64
	K                                   int32
}

// Value is the score: savings fraction over disruption fraction (0 without
// savings, +Inf without disruption).
func (s Score) Value() float64 {
	if s.SavingsFraction <= 0 {
		return 0
	}
	if s.DisruptionFraction == 0 {
		return math.Inf(1)
	}
	return s.SavingsFraction / s.DisruptionFraction
}

// Threshold is 1/k.
func (s Score) Threshold() float64 { return 1 / float64(s.K) }

// Approved: an unscored pool, or a score at or above the threshold.
func (s Score) Approved() bool { return !s.Scored || s.Value() >= s.Threshold() }

// String is the score in upstream's words: "score 0.80 >= threshold 0.50 (k:
// 2, savings 4.0%, disruption 5.0%)", with "<" for a rejected move.
func (s Score) String() string {
	op := ">="
	if !s.Approved() {
		op = "<"
	}
	return fmt.Sprintf("score %.2f %s threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		s.Value(), op, s.Threshold(), s.K, s.SavingsFraction*100, s.DisruptionFraction*100)
}

// Move is a consolidation move a pass found (its simulation succeeded) and
// scored, approved or not.
type Move struct {
	// Scores per NodePool of the candidates, by pool name.
	Scores   []Score
	Approved bool
	// Multi: several candidates moved together.
	Multi bool
}

// poolTotal is a NodePool's cost per hour and disruption, over all its nodes.
type poolTotal struct{ cost, disruption float64 }

// rescheduleCost is the node's disruption for Balanced scoring: 1 plus the
// eviction cost of each pod it moves, counted from 0 (no lifetime factor).
func rescheduleCost(n *node, managed bool) float64 {
	c := 1.0
	for _, pod := range n.moving {
		c += math.Max(0, evictionCost(pod, managed))
	}
	return c
}

// poolTotals sums, once per pass, every node's price and disruption by pool.
func (p *pass) poolTotals() map[string]poolTotal {
	if p.totals != nil {
		return p.totals
	}
	p.totals = map[string]poolTotal{}
	for _, n := range p.nodes {
		if n.pool == nil {
			continue
		}
		t := p.totals[n.pool.NodePool.Name]
		if n.priced {
			t.cost += n.price
		}
		t.disruption += n.rescheduleCost
		p.totals[n.pool.NodePool.Name] = t
	}
	return p.totals
}

// scoreMove scores a move of the candidates saving savings per hour (their
// price less the replacement's), per NodePool, pools in name order.
func (p *pass) scoreMove(cands []*node, savings float64) []Score {
	byPool := map[string][]*node{}
	var names []string
	total := 0.0
	for _, c := range cands {
		name := c.pool.NodePool.Name
		if _, ok := byPool[name]; !ok {
			names = append(names, name)
		}
		byPool[name] = append(byPool[name], c)
		total += c.price
	}
	sort.Strings(names)
	totals := p.poolTotals()
	out := make([]Score, 0, len(names))
	for _, name := range names {
		l := byPool[name]
		np := l[0].pool.NodePool
		s := Score{NodePool: name, Policy: np.Spec.Disruption.ConsolidationPolicy, K: v1.BalancedK}
		if s.Policy != v1.ConsolidationPolicyBalanced {
			out = append(out, s)
			continue
		}
		s.Scored = true
		poolSavings, poolPrice, disruption := savings, priceOf(l), 0.0
		if len(names) > 1 && total > 0 {
			poolSavings = savings * poolPrice / total
		}
		for _, c := range l {
			disruption += c.rescheduleCost
		}
		if t := totals[name]; t.cost > 0 && t.disruption > 0 {
			s.SavingsFraction, s.DisruptionFraction = poolSavings/t.cost, disruption/t.disruption
		}
		out = append(out, s)
	}
	return out
}

// balancedVerdict scores a move the simulation found and records it in the
// pass's result; it returns why the move is refused ("" when approved).
func (p *pass) balancedVerdict(d *Decision, cands []*node, multi bool) string {
	scores := p.scoreMove(cands, d.CandidatesPrice-d.ReplacementsPrice)
	mv := Move{Scores: scores, Approved: true, Multi: multi}
	why := ""
	for _, s := range scores {
		if !s.Approved() {
			mv.Approved = false
			if why == "" {
				why = fmt.Sprintf("nodepool %s has consolidationPolicy Balanced and this %s scores too low: %s", s.NodePool, d.Action(), s)
			}
		}
	}
	p.res.Moves = append(p.res.Moves, mv)
	if mv.Approved {
		d.Scores = scores
	}
	return why
}

// balancedCanPass reports whether deleting the node, the best any move of it
// can do (all its price saved, no replacement), passes its Balanced pool's
// threshold; when not, it says why. Nodes of other pools always pass.
func (p *pass) balancedCanPass(n *node) (bool, string) {
	if n.pool.NodePool.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
		return true, ""
	}
	s := p.scoreMove([]*node{n}, n.price)[0]
	if s.Approved() {
		return true, ""
	}
	return false, fmt.Sprintf("nodepool %s has consolidationPolicy Balanced and even deleting the node scores too low: %s", n.pool.NodePool.Name, s)
}
