package disruption

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Pass is one evaluation of a snapshot. Run tries the methods in order; the
// controller may instead call Method for each to time them separately.
type Pass struct {
	pass
}

type pass struct {
	in *Input
	// credit, while set, is the capacity reservation whose slot simulations
	// count as freed (see fitsOnceFreed).
	credit  string
	pools   map[string]*NodePool
	nodes   []*node
	byName  map[string]*node
	pdbs    map[string][]*pdbInfo
	budgets map[string]map[v1.DisruptionReason]*BudgetStatus
	pending []*corev1.Pod
	cache   *scheduling.Cache
	// zonalOwners host pods whose required anti-affinity spans more than their
	// own node: every simulation must count them.
	zonalOwners []*node
	// matching caches, per label selector, the nodes hosting pods it selects.
	matching map[string][]*node

	pk         *packer
	lastPacked *packedPass
	// typesByName indexes each pool's instance types (instanceType).
	typesByName map[*NodePool]map[string]*scheduling.InstanceType
	// full caches roomless copies of nodes (partition.go).
	full      map[*scheduling.ExistingNode]*scheduling.ExistingNode
	options   []launchOption
	poolMasks map[int]uint64

	res       *Result
	explained map[*node]bool
	maxWork   int
	// consolidation candidates, computed once for both consolidation methods.
	consolidation    []*node
	consolidationSet bool
	// repacking: simulations solve with the provisioner's repacking
	// (scheduling Options.Repack), for repack consolidation.
	repacking bool
	// repairs are the compiled repair policies; nil without the NodeRepair gate.
	repairs *repairMatcher
	// totals: each NodePool's cost and disruption, for Balanced scoring.
	totals map[string]poolTotal
}

// NewPass prepares a pass over the input.
func NewPass(in *Input) *Pass {
	p := &Pass{}
	p.init(in)
	return p
}

func (p *pass) init(in *Input) {
	if in.Scheduling == nil {
		in = shallowWithScheduling(in)
	}
	p.in = in
	p.pools = map[string]*NodePool{}
	for _, np := range in.NodePools {
		p.pools[np.NodePool.Name] = np
	}
	p.pdbs = newPDBs(in)
	p.budgets = budgets(in)
	p.pending = in.Scheduling.Pods
	p.cache = in.Scheduling.Cache
	if p.cache == nil {
		p.cache = scheduling.NewCache()
	}
	p.byName = map[string]*node{}
	p.typesByName = map[*NodePool]map[string]*scheduling.InstanceType{}
	p.poolMasks = map[int]uint64{}
	p.matching = map[string][]*node{}
	if in.Options.NodeRepair {
		// An invalid set is refused at start-up (ValidateRepairPolicies); here
		// the policies that compile are used.
		p.repairs, _ = compileRepairPolicies(in.RepairPolicies)
	}
	for _, n := range in.Nodes {
		nn := newNode(p, n)
		p.nodes = append(p.nodes, nn)
		p.byName[n.Name] = nn
		for _, pod := range n.Pods() {
			if active(pod) && spansNodes(pod) {
				p.zonalOwners = append(p.zonalOwners, nn)
				break
			}
		}
	}
	sort.SliceStable(p.nodes, func(i, j int) bool { return p.nodes[i].Name < p.nodes[j].Name })
	p.res = &Result{Eligible: map[v1.DisruptionReason]int{}}
	p.explained = map[*node]bool{}
	p.maxWork = in.Options.MaxSimulationWork
	if p.maxWork <= 0 {
		p.maxWork = DefaultMaxSimulationWork
	}
	reasons := ReasonsFor(in.Options)
	for _, np := range in.NodePools {
		for _, r := range reasons {
			p.res.Budgets = append(p.res.Budgets, *p.budgets[np.NodePool.Name][r])
		}
	}
}

func shallowWithScheduling(in *Input) *Input {
	cp := *in
	cp.Scheduling = &scheduling.Input{}
	return &cp
}

func (p *pass) packer() *packer {
	if p.pk == nil {
		p.pk = newPacker(p)
	}
	return p.pk
}

// Run evaluates the snapshot: the first method with a decision wins.
func Run(in *Input) *Result {
	p := NewPass(in)
	for _, m := range MethodsFor(in.Options) {
		if p.Method(m) != nil {
			break
		}
	}
	return p.Result()
}

// Method runs one method and records its decision, if any, in the result.
func (p *Pass) Method(m Method) *Decision {
	d := m.decide(&p.pass)
	if d != nil {
		p.res.Decision = d
	}
	return d
}

// Result returns what the pass found so far.
func (p *Pass) Result() *Result {
	sort.SliceStable(p.res.Explanations, func(i, j int) bool {
		return p.res.Explanations[i].Node.Name < p.res.Explanations[j].Node.Name
	})
	return p.res
}

func (p *pass) explain(n *node, m Method, code Code, msg string) {
	if p.explained[n] || msg == "" {
		return
	}
	p.explained[n] = true
	p.res.Explanations = append(p.res.Explanations, &Explanation{Node: n.Node, Method: m, Code: code, Message: msg})
}

func (p *pass) overWork() bool { return p.res.SimulationWork >= p.maxWork }

func (p *pass) timedOut(m Method) {
	for _, x := range p.res.TimedOut {
		if x == m {
			return
		}
	}
	p.res.TimedOut = append(p.res.TimedOut, m)
}

// candidates returns the nodes the method wants and no rule protects,
// explaining the others.
func (p *pass) candidates(m Method) []*node {
	var out []*node
	for _, n := range p.nodes {
		want, why := p.wants(n, m)
		if !want {
			if why != nil {
				p.explain(n, m, why.code, why.msg)
			}
			continue
		}
		if b := p.block(n, m); b != nil {
			p.explain(n, m, b.code, b.msg)
			continue
		}
		out = append(out, n)
	}
	if c := p.res.Eligible[m.Reason()]; len(out) > c {
		p.res.Eligible[m.Reason()] = len(out)
	}
	return out
}

func (p *pass) budget(n *node, r v1.DisruptionReason) *BudgetStatus {
	return p.budgets[n.pool.NodePool.Name][r]
}

func nodesOf(ns []*node) []*Node {
	out := make([]*Node, len(ns))
	for i, n := range ns {
		out[i] = n.Node
	}
	return out
}

func names(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

func priceOf(ns []*node) float64 {
	s := 0.0
	for _, n := range ns {
		s += n.price
	}
	return s
}

// FormatPrice writes a price per hour with three significant digits.
func FormatPrice(p float64) string { return fmt.Sprintf("%.3g/h", p) }

func describeClaims(cs []*scheduling.NewClaim) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = describeClaim(c)
	}
	return strings.Join(parts, " and ")
}

func describeClaim(c *scheduling.NewClaim) string {
	if len(c.InstanceTypes) == 0 {
		return "1 node of nodepool " + c.NodePool.Name
	}
	types := c.InstanceTypes[0].Name
	if n := len(c.InstanceTypes) - 1; n > 0 {
		types += fmt.Sprintf(" or %d other type(s)", n)
	}
	return fmt.Sprintf("1 node of nodepool %s (%s, from %s)", c.NodePool.Name, types, FormatPrice(c.Price))
}
