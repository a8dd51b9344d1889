package disruption

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The two consolidation methods (multinode.go, singlenode.go) share what is in
// this file: their candidate filter and candidates, and the simulation that
// decides whether a set of candidates can go.

// wantsConsolidation is the consolidation methods' filter: consolidatable
// nodes with reschedulable pods (empty ones are emptiness's) in NodePools whose
// policy is WhenEmptyOrUnderutilized or Balanced (scored, see balanced.go);
// those the policy excludes are explained.
func wantsConsolidation(n *node) (bool, *block) {
	if !n.consolidatable || n.empty() {
		return false, nil
	}
	d := &n.pool.NodePool.Spec.Disruption
	if n.pool.NodePool.Spec.Replicas != nil {
		return false, staticBlock(n)
	}
	if d.ConsolidateAfter.Duration == nil {
		return false, &block{CodeConsolidationDisabled, fmt.Sprintf("nodepool %s has consolidation disabled (consolidateAfter: Never)", n.pool.NodePool.Name)}
	}
	if d.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty {
		return false, &block{CodeConsolidationDisabled, fmt.Sprintf("nodepool %s only consolidates empty nodes (consolidationPolicy: WhenEmpty)", n.pool.NodePool.Name)}
	}
	return true, nil
}

// consolidationCandidates are the consolidatable nodes with a known price in
// NodePools whose Underutilized budget is not used up. Both consolidation
// methods use them, computed once per pass; the nodes left out are explained
// under single-node consolidation's name, the method that goes through every
// candidate.
func (p *pass) consolidationCandidates() []*node {
	if p.consolidationSet {
		return p.consolidation
	}
	p.consolidationSet = true
	for _, n := range p.candidates(MethodSingleNodeConsolidation) {
		if !n.priced {
			lbls := n.labels()
			p.explain(n, MethodSingleNodeConsolidation, CodeUnpriced, fmt.Sprintf("price of node %s is unknown (instance type %q, zone %q, capacity type %q not offered by nodepool %s)",
				n.Name, lbls[corev1.LabelInstanceTypeStable], lbls[corev1.LabelTopologyZone], lbls[v1.CapacityTypeLabelKey], n.pool.NodePool.Name))
			continue
		}
		if b := p.budget(n, v1.DisruptionReasonUnderutilized); b.Allowed == 0 {
			p.explain(n, MethodSingleNodeConsolidation, CodeBudget, b.Message)
			continue
		}
		if ok, why := p.balancedCanPass(n); !ok {
			p.explain(n, MethodSingleNodeConsolidation, CodeUnconsolidatable, why)
			continue
		}
		p.consolidation = append(p.consolidation, n)
	}
	return p.consolidation
}

// consolidate decides whether the candidates can go, as a decision of method
// m: deleted when their pods fit on the other nodes, replaced when they fit
// with exactly one new node cheaper than the candidates together. It returns
// why not otherwise. multi: the candidates go together (several nodes, whose
// own instance types a replacement may not be); otherwise there is one, and a
// spot-to-spot replacement needs the cheaper instance types upstream asks of a
// single node.
func (p *pass) consolidate(m Method, cands []*node, multi bool) (*Decision, string) {
	price := priceOf(cands)
	allSpot := allOnSpot(cands)
	subject := "its pods"
	if multi {
		subject = fmt.Sprintf("the pods of %d nodes", len(cands))
	}
	spotBlocked := allSpot && !p.in.Options.SpotToSpotConsolidation && p.everyPoolAllowsSpot()
	sim, why := p.simulate(cands, func(left []*podReq) string {
		if spotBlocked {
			return fmt.Sprintf("%s do not all fit on other nodes, and SpotToSpotConsolidation is disabled, so a spot node cannot be replaced with a spot node", subject)
		}
		o, ok, why := p.replacementBound(left)
		if !ok {
			return fmt.Sprintf("%s do not all fit on other nodes and %s", subject, why)
		}
		if o.price >= price {
			return fmt.Sprintf("no cheaper replacement: cheapest compatible costs %s vs %s (%s, for what does not fit on other nodes)",
				FormatPrice(o.price), FormatPrice(price), o.name)
		}
		return ""
	})
	if sim == nil {
		return nil, why
	}
	if !sim.ok {
		return nil, fmt.Sprintf("%s cannot all be rescheduled: %v", subject, sim.err)
	}
	d := &Decision{Method: m, Candidates: nodesOf(cands), CandidatesPrice: price}
	switch len(sim.replacements) {
	case 0:
		if multi {
			d.Explanation = fmt.Sprintf("the pods of %d nodes (%s) fit on other nodes: deleting them saves %s", len(cands), joinNames(cands), FormatPrice(price))
		} else {
			d.Explanation = fmt.Sprintf("the pods of node %s fit on other nodes: deleting it saves %s", cands[0].Name, FormatPrice(price))
		}
		return p.scored(d, cands, multi)
	case 1:
	default:
		return nil, fmt.Sprintf("%s would need %d new nodes", subject, len(sim.replacements))
	}
	claim, why := p.cheaperReplacement(sim.replacements[0], cands, price, allSpot, multi)
	if claim == nil {
		return nil, why
	}
	d.Replacements = []*scheduling.NewClaim{claim}
	d.ReplacementsPrice = claim.Price
	if multi {
		d.Explanation = fmt.Sprintf("replacing %d nodes (%s, %s) with %s", len(cands), joinNames(cands), FormatPrice(price), describeClaim(claim))
	} else {
		d.Explanation = fmt.Sprintf("replacing node %s (%s) with a cheaper %s", cands[0].Name, FormatPrice(price), strings.TrimPrefix(describeClaim(claim), "1 "))
	}
	return p.scored(d, cands, multi)
}

// scored passes a move the simulation found through Balanced scoring: refused
// when a Balanced pool's score is below its threshold, else explained with the
// scores of the Balanced pools.
func (p *pass) scored(d *Decision, cands []*node, multi bool) (*Decision, string) {
	if why := p.balancedVerdict(d, cands, multi); why != "" {
		return nil, why
	}
	for _, s := range d.Scores {
		if s.Scored {
			d.Explanation += fmt.Sprintf("; nodepool %s (Balanced): %s", s.NodePool, s)
		}
	}
	return d, ""
}

// allOnSpot reports whether every node runs on spot capacity.
func allOnSpot(ns []*node) bool {
	for _, n := range ns {
		if n.capacityType != v1.CapacityTypeSpot {
			return false
		}
	}
	return true
}

func joinNames(ns []*node) string {
	const show = 5
	s := ""
	for i, n := range ns {
		if i == show {
			return s + fmt.Sprintf(" and %d more", len(ns)-show)
		}
		if i > 0 {
			s += ", "
		}
		s += n.Name
	}
	return s
}

func (p *pass) everyPoolAllowsSpot() bool {
	for _, np := range p.in.Scheduling.NodePools {
		if !np.Requirements.Has(scheduling.LabelCapacityType, scheduling.CapacityTypeSpot) {
			return false
		}
	}
	return len(p.in.Scheduling.NodePools) > 0
}

// offeringPrice is the cheapest available offering of it the requirements allow.
func offeringPrice(it *scheduling.InstanceType, reqs scheduling.Requirements) (float64, bool) {
	best := math.Inf(1)
	for _, o := range it.Offerings {
		if !o.Launchable() || !reqs.Has(scheduling.LabelZone, o.Zone) || !reqs.Has(scheduling.LabelCapacityType, o.CapacityType) {
			continue
		}
		if o.Requirements.Len() > 0 && reqs.Intersects(o.Requirements) != nil {
			continue
		}
		best = math.Min(best, o.Price)
	}
	return best, !math.IsInf(best, 1)
}

type pricedType struct {
	it    *scheduling.InstanceType
	price float64
}

// cheaperThan keeps the types whose cheapest allowed offering costs less than
// limit, cheapest first; it also returns the cheapest price seen at all.
func cheaperThan(its []*scheduling.InstanceType, reqs scheduling.Requirements, limit float64) ([]pricedType, float64) {
	var out []pricedType
	cheapest := math.Inf(1)
	for _, it := range its {
		pr, ok := offeringPrice(it, reqs)
		if !ok {
			continue
		}
		cheapest = math.Min(cheapest, pr)
		if pr < limit {
			out = append(out, pricedType{it, pr})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].price < out[j].price })
	return out, cheapest
}

// cheaperReplacement narrows the solver's claim to instance types cheaper than
// the candidates (and, spot to spot, to the cheapest 15), or says why none is.
func (p *pass) cheaperReplacement(claim *scheduling.NewClaim, cands []*node, price float64, allSpot, multi bool) (*scheduling.NewClaim, string) {
	reqs := claim.Requirements
	ct, hasCT := reqs.Get(scheduling.LabelCapacityType)
	allowsSpot := !hasCT || ct.Has(scheduling.CapacityTypeSpot)
	allowsOD := !hasCT || ct.Has(scheduling.CapacityTypeOnDemand)
	spotOnly := reqs.With(scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, scheduling.CapacityTypeSpot))
	noCheaper := func(cheapest float64) string {
		if math.IsInf(cheapest, 1) {
			return "no cheaper replacement: no compatible instance type has an available offering"
		}
		return fmt.Sprintf("no cheaper replacement: cheapest compatible costs %s vs %s", FormatPrice(cheapest), FormatPrice(price))
	}
	var kept []pricedType
	if allSpot && allowsSpot {
		if !p.in.Options.SpotToSpotConsolidation {
			return nil, "SpotToSpotConsolidation is disabled, so a spot node cannot be replaced with a spot node"
		}
		reqs = spotOnly
		var cheapest float64
		if kept, cheapest = cheaperThan(claim.InstanceTypes, reqs, price); len(kept) == 0 {
			return nil, noCheaper(cheapest)
		}
		if !multi && len(kept) < MinInstanceTypesForSpotToSpotConsolidation {
			return nil, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance types than the current node, got %d", MinInstanceTypesForSpotToSpotConsolidation, len(kept))
		}
	} else {
		var cheapest float64
		if kept, cheapest = cheaperThan(claim.InstanceTypes, reqs, price); len(kept) == 0 {
			return nil, noCheaper(cheapest)
		}
		// On-demand to [on-demand, spot]: the types were found cheaper assuming
		// the spot offering launches, so only spot may launch; if spot capacity
		// runs out the launch fails and the node stays, rather than being
		// replaced by a pricier on-demand node.
		if allowsSpot && allowsOD {
			reqs = spotOnly
			if kept, cheapest = cheaperThan(claim.InstanceTypes, reqs, price); len(kept) == 0 {
				return nil, noCheaper(cheapest)
			}
		}
	}
	if multi {
		// Replacing several nodes with one of their own types is at best deleting
		// the others: keep only types cheaper than the cheapest candidate of a
		// type the list shares with the candidates.
		limit := math.Inf(1)
		inList := map[string]bool{}
		for _, k := range kept {
			inList[k.it.Name] = true
		}
		for _, c := range cands {
			if c.instanceType != nil && inList[c.instanceType.Name] {
				limit = math.Min(limit, c.price)
			}
		}
		var out []pricedType
		for _, k := range kept {
			if k.price < limit {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			return nil, "the only cheaper replacements are the candidates' own instance types"
		}
		kept = out
	}
	its := make([]*scheduling.InstanceType, len(kept))
	for i, k := range kept {
		its[i] = k.it
	}
	need, why := minValuesPrefix(reqs, its)
	if why != "" {
		return nil, "after keeping only cheaper instance types, " + why
	}
	if allSpot && !multi {
		its = its[:min(len(its), max(MinInstanceTypesForSpotToSpotConsolidation, need))]
	}
	typeNames := make([]string, len(its))
	for i, it := range its {
		typeNames[i] = it.Name
	}
	out := *claim
	out.InstanceTypes = its
	out.Price = kept[0].price
	out.Requirements = reqs.With(scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, typeNames...))
	if r, ok := reqs.Get(scheduling.LabelInstanceType); ok && r.MinValues != nil {
		it := out.Requirements
		nr, _ := it.Get(scheduling.LabelInstanceType)
		nr.MinValues = r.MinValues
		out.Requirements = it.With(nr)
	}
	return &out, ""
}

// minValuesPrefix returns how many of the (price-ordered) types are needed to
// meet every minValues of reqs, or why they cannot be.
func minValuesPrefix(reqs scheduling.Requirements, its []*scheduling.InstanceType) (int, string) {
	need := 0
	for _, r := range reqs.All() {
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		reached := -1
		for i, it := range its {
			for _, v := range typeValues(it, r.Key) {
				if r.Has(v) {
					seen[v] = true
				}
			}
			if len(seen) >= *r.MinValues {
				reached = i + 1
				break
			}
		}
		if reached < 0 {
			return 0, fmt.Sprintf("minValues %d for %s cannot be met (only %d values)", *r.MinValues, r.Key, len(seen))
		}
		need = max(need, reached)
	}
	return need, ""
}

func typeValues(it *scheduling.InstanceType, key string) []string {
	switch key {
	case scheduling.LabelInstanceType:
		return []string{it.Name}
	case scheduling.LabelZone, scheduling.LabelCapacityType:
		var out []string
		for _, o := range it.Offerings {
			if !o.Launchable() {
				continue
			}
			if key == scheduling.LabelZone {
				out = append(out, o.Zone)
			} else {
				out = append(out, o.CapacityType)
			}
		}
		return out
	}
	if r, ok := it.Requirements.Get(key); ok && r.Operator() == corev1.NodeSelectorOpIn {
		return r.Values()
	}
	return nil
}

// revalidateConsolidation simulates the candidates again: a delete must stay a
// delete, a replace a replace whose instance types are among those decided.
func (p *pass) revalidateConsolidation(m Method, cands []*node, d *Decision, multi bool) (bool, string) {
	again, why := p.consolidate(m, cands, multi)
	if again == nil {
		return false, why
	}
	if again.Action() != d.Action() {
		return false, fmt.Sprintf("the decision changed from %s to %s", d.Action(), again.Action())
	}
	if d.Action() == ActionReplace {
		if it := undecidedType(d, again); it != "" {
			return false, fmt.Sprintf("the replacement would now need instance type %s, not among those decided", it)
		}
	}
	return true, ""
}

// undecidedType is an instance type a replacement of again may launch as that
// no replacement of d may, or "".
func undecidedType(d, again *Decision) string {
	allowed := map[string]bool{}
	for _, r := range d.Replacements {
		for _, it := range r.InstanceTypes {
			allowed[it.Name] = true
		}
	}
	for _, r := range again.Replacements {
		for _, it := range r.InstanceTypes {
			if !allowed[it.Name] {
				return it.Name
			}
		}
	}
	return ""
}
