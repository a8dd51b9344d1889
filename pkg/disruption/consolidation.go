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

// consolidate decides whether the candidates can go: deleted when their pods
// fit on the other nodes, replaced when they fit with exactly one new node
// cheaper than the candidates together. It returns why not otherwise.
func (p *pass) consolidate(cands []*node, multi bool) (*Decision, string) {
	price := priceOf(cands)
	allSpot := true
	for _, c := range cands {
		if c.capacityType != v1.CapacityTypeSpot {
			allSpot = false
		}
	}
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
	d := &Decision{Method: MethodSingleNodeConsolidation, Reason: v1.DisruptionReasonUnderutilized, Candidates: nodesOf(cands), CandidatesPrice: price}
	if multi {
		d.Method = MethodMultiNodeConsolidation
	}
	switch len(sim.replacements) {
	case 0:
		if multi {
			d.Explanation = fmt.Sprintf("the pods of %d nodes (%s) fit on other nodes: deleting them saves %s", len(cands), joinNames(cands), FormatPrice(price))
		} else {
			d.Explanation = fmt.Sprintf("the pods of node %s fit on other nodes: deleting it saves %s", cands[0].Name, FormatPrice(price))
		}
		return d, ""
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
	return d, ""
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
		if !o.Available || !reqs.Has(scheduling.LabelZone, o.Zone) || !reqs.Has(scheduling.LabelCapacityType, o.CapacityType) {
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
			if !o.Available {
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

// multiNode looks for the longest prefix of candidates (cheapest to disrupt
// per dollar first) that can go together, replaced by at most one cheaper node.
// A binary search with the packer's optimistic answer finds the largest
// plausible prefix without solving; solves then confirm it, or search below it.
func (p *pass) multiNode() *Decision {
	all := p.consolidationCandidates()
	cands := append([]*node(nil), all...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].cost/cands[i].price, cands[j].cost/cands[j].price
		if a != b {
			return a < b
		}
		return cands[i].Name < cands[j].Name
	})
	// Keep, in order, what the budgets allow.
	left := map[string]int{}
	var allowed []*node
	for _, n := range cands {
		pool := n.pool.NodePool.Name
		if _, ok := left[pool]; !ok {
			left[pool] = p.budget(n, v1.DisruptionReasonUnderutilized).Allowed
		}
		if left[pool] > 0 {
			left[pool]--
			allowed = append(allowed, n)
		}
	}
	if len(allowed) < 2 {
		return nil
	}
	plausible := func(k int) bool {
		prefix := allowed[:k]
		price := priceOf(prefix)
		pk := p.packer()
		excluded := map[*node]bool{}
		isMoving := map[*corev1.Pod]bool{}
		var reqs []*podReq
		for _, c := range prefix {
			excluded[c] = true
			for _, pod := range c.moving {
				isMoving[pod] = true
				reqs = append(reqs, pk.pod(pod))
			}
		}
		for _, pod := range p.pending {
			reqs = append(reqs, pk.pod(pod))
		}
		packed := pk.pack(excluded, reqs)
		var left []*podReq
		for _, u := range packed.unplaced {
			if isMoving[u.pod] {
				left = append(left, u)
			}
		}
		if len(left) == 0 {
			return true
		}
		o, ok, _ := p.replacementBound(left)
		return ok && o.price < price
	}
	lo, hi, best := 2, len(allowed), 0
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
	if d, _ := p.consolidate(allowed[:best], true); d != nil {
		return d
	}
	// The solver disagreed with the packer (topology, ports, volumes...):
	// search the shorter prefixes with solves.
	var found *Decision
	lo, hi = 2, best-1
	for lo <= hi {
		if p.overWork() {
			p.timedOut(MethodMultiNodeConsolidation)
			break
		}
		mid := (lo + hi) / 2
		if d, _ := p.consolidate(allowed[:mid], true); d != nil {
			found, lo = d, mid+1
		} else {
			hi = mid - 1
		}
	}
	return found
}

// singleNode tries each candidate alone, NodePools interleaved so that a large
// pool does not starve the others, cheapest to disrupt first; the first that
// can go is the decision.
func (p *pass) singleNode() *Decision {
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
			p.timedOut(MethodSingleNodeConsolidation)
			return nil
		}
		d, why := p.consolidate([]*node{n}, false)
		if d != nil {
			return d
		}
		p.explain(n, MethodSingleNodeConsolidation, CodeUnconsolidatable, why)
	}
	return nil
}

// Validate re-checks, on a fresh snapshot, a decision taken earlier: every
// candidate must still be one for its method, the budgets must still allow
// them, and a consolidation must still come out the same way (delete stays
// delete; a replacement's instance types stay within the decided ones).
func Validate(in *Input, d *Decision) (bool, string) {
	p := NewPass(in)
	var cands []*node
	perPool := map[string]int{}
	for _, c := range d.Candidates {
		n, ok := p.byName[c.Name]
		if !ok {
			return false, fmt.Sprintf("node %s is gone", c.Name)
		}
		if want, why := p.wants(n, d.Method); !want {
			if why != nil {
				return false, why.msg
			}
			return false, fmt.Sprintf("node %s is no longer a candidate for %s", n.Name, d.Method)
		}
		if b := p.block(n, d.Method); b != nil {
			if b.msg == "" {
				return false, fmt.Sprintf("node %s is already being disrupted", n.Name)
			}
			return false, b.msg
		}
		perPool[n.pool.NodePool.Name]++
		if b := p.budget(n, d.Reason); perPool[n.pool.NodePool.Name] > b.Allowed {
			msg := b.Message
			if msg == "" {
				msg = fmt.Sprintf("nodepool %s: budget allows %d %s disruption(s) now", n.pool.NodePool.Name, b.Allowed, d.Reason)
			}
			return false, msg
		}
		cands = append(cands, n)
	}
	switch d.Method {
	case MethodMultiNodeConsolidation, MethodSingleNodeConsolidation:
		again, why := p.consolidate(cands, d.Method == MethodMultiNodeConsolidation)
		if again == nil {
			return false, why
		}
		if again.Action() != d.Action() {
			return false, fmt.Sprintf("the decision changed from %s to %s", d.Action(), again.Action())
		}
		if d.Action() == "replace" {
			allowed := map[string]bool{}
			for _, it := range d.Replacements[0].InstanceTypes {
				allowed[it.Name] = true
			}
			for _, it := range again.Replacements[0].InstanceTypes {
				if !allowed[it.Name] {
					return false, fmt.Sprintf("the replacement would now need instance type %s, not among those decided", it.Name)
				}
			}
		}
	}
	return true, ""
}
