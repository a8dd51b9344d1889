package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Instance types: which of a pool's types remain possible for a claim, in price order.

// priced is an instance type (position in its pool) with the price of its cheapest offering.
type priced struct {
	i     int
	price float64
}

// compatible returns the instance types of p whose labels and available offerings can satisfy
// the requirement set id, computed once per (pool, requirement set).
func (s *solver) compatible(p *poolState, id int32) bitset {
	if b, ok := p.compat[id]; ok {
		return b
	}
	key, memo := s.reqKeys[id], p.memo()
	if memo != nil && key != uniqueKey {
		if b, ok := memoGet(memo, &memo.compat, key); ok {
			p.compat[id] = b
			return b
		}
	}
	reqs := s.reqByID[id]
	b := newBitset(len(p.its))
	oc := newOfferingCheck(reqs)
	lbl := s.labelCompatible(p, reqs)
	if s.sc != nil && s.cache == nil {
		// Without a Cache the price list that ordered needs comes in the same pass over the
		// offerings (kept in the scratch): each type's cheapest compatible offering, found as
		// ordered would find it.
		out := s.prices.take(lbl.count())[:0]
		lbl.forEach(func(i int) {
			best, found := math.Inf(1), false
			for oi := range p.its[i].Offerings {
				o := &p.its[i].Offerings[oi]
				if o.Price < best {
					if oc.compatible(o) {
						best, found = o.Price, true
					}
				} else if !found && oc.compatible(o) {
					found = true
				}
			}
			if found {
				b.set(i)
				out = append(out, priced{i: i, price: best})
			}
		})
		if p.unordered == nil {
			p.unordered = map[int32][]priced{}
		}
		p.unordered[id] = out
		p.compat[id] = b
		return b
	}
	lbl.forEach(func(i int) {
		it := p.its[i]
		for oi := range it.Offerings {
			if oc.compatible(&it.Offerings[oi]) {
				b.set(i)
				break
			}
		}
	})
	p.compat[id] = b
	if memo != nil && key != uniqueKey {
		memoPut(memo, &memo.compat, key, b, 8*len(b))
	}
	return b
}

// labelCompatible returns the instance types of p whose labels (and name) admit reqs. Only
// the requirements on keys some type defines can exclude a type: sets that differ elsewhere
// (claims pinned to different zones, say) share one computation in this solve.
func (s *solver) labelCompatible(p *poolState, reqs Requirements) bitset {
	key := s.projBuf[:0]
	for i := range reqs.reqs {
		r := &reqs.reqs[i]
		if r.Key != LabelInstanceType && !p.itKeys[r.Key] {
			continue
		}
		key = append(key, r.Key...)
		key = append(key, ' ')
		key = r.appendKey(key)
		key = append(key, ", "...)
	}
	s.projBuf = key
	if b, ok := p.labelCompat[string(key)]; ok {
		return b
	}
	b := newBitset(len(p.its))
	itReq, constrainsType := reqs.Get(LabelInstanceType)
	for i, it := range p.its {
		if (constrainsType && !itReq.Has(it.Name)) || !it.Requirements.intersects(reqs) {
			continue
		}
		b.set(i)
	}
	if p.labelCompat == nil {
		p.labelCompat = map[string]bitset{}
	}
	p.labelCompat[string(key)] = b
	return b
}

// memo is the pool's memo across solves (see typeMemo), nil when the pool was not prepared
// through a Cache.
func (p *poolState) memo() *typeMemo {
	if p.pp == nil {
		return nil
	}
	return &p.pp.memo
}

// types narrows a claim's instance types to those compatible with requirement set id that can
// still hold the claim's pods plus req, and gives their componentwise minimum allocatable. It
// honours minValues (unless BestEffort).
func (s *solver) types(t *target, id int32, req resVec) (bitset, resVec, bool) {
	compat := s.compatible(t.pool, id)
	// Fast path: when the pods fit even the smallest candidate (componentwise) and the new
	// requirements keep every candidate, nothing is narrowed and the claim keeps its bitset.
	// A claim filling up drops its small types a few at a time, so most pods take this path.
	if t.minAvail == nil {
		t.minAvail = s.minAlloc(t.pool, t.its)
	}
	if t.minAvail != nil && sumFitsIn(t.used, req, t.minAvail) && subsetOf(t.its, compat) {
		if s.hasMin[id] && s.opts.MinValuesPolicy == MinValuesPolicyStrict {
			if _, ok := s.minValuesShortfall(t.pool, id, t.its); ok {
				return nil, nil, false
			}
		}
		return t.its, t.minAvail, true
	}
	out := bitset(s.bits.take(len(t.its)))
	for wi := range out {
		out[wi] = t.its[wi] & compat[wi]
	}
	if t.pool.fit == nil {
		t.pool.fit = newFitTable(t.pool.alloc, len(s.ri.names), &s.bits, &s.vecs)
	}
	low := resVec(s.vecs.take(len(t.used)))
	if !narrowTypes(t.pool.fit, t.pool.alloc, out, t.used, req, low) {
		return nil, nil, false
	}
	if s.hasMin[id] && s.opts.MinValuesPolicy == MinValuesPolicyStrict {
		if _, ok := s.minValuesShortfall(t.pool, id, out); ok {
			return nil, nil, false
		}
	}
	return out, low, true
}

// minValuesShortfall reports the first key whose minValues the instance types do not reach.
func (s *solver) minValuesShortfall(p *poolState, id int32, its bitset) (string, bool) {
	for _, r := range s.reqByID[id].reqs {
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		its.forEach(func(i int) {
			for _, v := range s.valuesOf(p, i, r.Key) {
				if r.Has(v) {
					seen[v] = true
				}
			}
		})
		if len(seen) < *r.MinValues {
			return fmt.Sprintf("minValues %d for %s not met (only %d values)", *r.MinValues, r.Key, len(seen)), true
		}
	}
	return "", false
}

// valuesOf is the set of values instance type i gives key.
func (s *solver) valuesOf(p *poolState, i int, key string) []string {
	it := p.its[i]
	switch key {
	case LabelZone, LabelCapacityType:
		var out []string
		for oi := range it.Offerings {
			if o := &it.Offerings[oi]; o.Launchable() {
				if key == LabelZone {
					out = append(out, o.Zone)
				} else {
					out = append(out, o.CapacityType)
				}
			}
		}
		return out
	}
	if key == LabelInstanceType {
		return []string{it.Name}
	}
	if r, ok := it.Requirements.Get(key); ok && !r.complement {
		return r.values
	}
	return nil
}

// itRequirements is instance type i's labels including its name.
func (s *solver) itRequirements(p *poolState, i int) Requirements {
	return p.its[i].Requirements.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, p.its[i].Name))
}

// nameOrder lists the pool's instance type positions sorted by name.
func (p *poolState) nameOrder() []int {
	if p.byName == nil {
		p.byName = sortByName(p.its, make([]int, len(p.its)), make([]int64, len(p.its)))
	}
	return p.byName
}

// sortByName fills byName (len(its) long) with the positions of its in name order; keys is
// scratch of the same length. Names mostly share a prefix ("m5.", "fake-it-"): each is
// compared first by the 8 bytes after it, as one integer (see uidKey), and by the whole name
// only when those are equal.
func sortByName(its []*InstanceType, byName []int, keys []int64) []int {
	if len(its) == 0 {
		return byName
	}
	pre := len(its[0].Name)
	for _, it := range its[1:] {
		n := min(pre, len(it.Name))
		k := 0
		for k < n && it.Name[k] == its[0].Name[k] {
			k++
		}
		pre = k
	}
	for i, it := range its {
		byName[i] = i
		keys[i] = int64(uidKey(it.Name, pre) ^ 1<<63) // signed order = unsigned order of the key
	}
	// Ties broken by position: the order a stable sort gives, from a faster unstable one.
	slices.SortFunc(byName, func(a, b int) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		if c := strings.Compare(its[a].Name, its[b].Name); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return byName
}

// sortedNames is the pool's type names in name order (nameOrder), for chooseTypes.
func (s *solver) sortedNames(p *poolState) []string {
	if p.names == nil {
		byName := p.nameOrder()
		if s.sc != nil {
			p.names = s.strSlab.take(len(byName))
		} else {
			p.names = make([]string, len(byName))
		}
		p.namesUnique = true
		for k, i := range byName {
			p.names[k] = p.its[i].Name
			if k > 0 && p.names[k] == p.names[k-1] {
				p.namesUnique = false
			}
		}
	}
	return p.names
}

// minAlloc is the componentwise minimum of the allocatable resources of its, nil when empty.
func (s *solver) minAlloc(p *poolState, its bitset) resVec {
	var out resVec
	its.forEach(func(i int) {
		if out == nil {
			out = append(make(resVec, 0, len(s.ri.names)), p.alloc[i]...)
			return
		}
		for r, v := range p.alloc[i] {
			if v < out[r] {
				out[r] = v
			}
		}
	})
	return out
}

func (s *solver) maxAlloc(p *poolState, its bitset) resVec {
	return s.maxAllocInto(make(resVec, len(s.ri.names)), p, its)
}

// maxAllocInto is maxAlloc written into out (zero on entry).
func (s *solver) maxAllocInto(out resVec, p *poolState, its bitset) resVec {
	its.forEach(func(i int) {
		for r, v := range p.alloc[i] {
			if v > out[r] {
				out[r] = v
			}
		}
	})
	return out
}

// ordered returns a pool's instance types compatible with requirement set id, cheapest first,
// each with its cheapest compatible available offering's price.
func (s *solver) ordered(p *poolState, id int32) []priced {
	if o, ok := p.ordered[id]; ok {
		return o
	}
	key, memo := s.reqKeys[id], p.memo()
	if memo != nil && key != uniqueKey {
		if o, ok := memoGet(memo, &memo.ordered, key); ok {
			p.ordered[id] = o
			return o
		}
	}
	compat := s.compatible(p, id)
	out, ok := p.unordered[id]
	if !ok {
		oc := newOfferingCheck(s.reqByID[id])
		out = make([]priced, 0, compat.count())
		compat.forEach(func(i int) {
			best := math.Inf(1)
			for oi := range p.its[i].Offerings {
				o := &p.its[i].Offerings[oi]
				if o.Price < best && oc.compatible(o) {
					best = o.Price
				}
			}
			out = append(out, priced{i: i, price: best})
		})
	}
	// Ties broken by position (out is in position order): the order a stable sort gives.
	byPrice := func(a, b priced) int {
		if a.price != b.price {
			return cmp.Compare(a.price, b.price)
		}
		if c := strings.Compare(p.its[a.i].Name, p.its[b.i].Name); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	// Providers often list their types in price order already: checking costs one pass.
	if !slices.IsSortedFunc(out, byPrice) {
		slices.SortFunc(out, byPrice)
	}
	p.ordered[id] = out
	if memo != nil && key != uniqueKey {
		memoPut(memo, &memo.ordered, key, out, 16*len(out))
	}
	return out
}

// orderID gives requirement sets whose ordered lists are equal (same types, same prices, same
// order) the same small ID. Lists are found by a hash of their content and compared whole.
func (s *solver) orderID(p *poolState, id int32) int32 {
	if o, ok := p.orderOf[id]; ok {
		return o
	}
	if p.orderOf == nil {
		p.orderOf, p.orderByHash = map[int32]int32{}, map[uint64][]int32{}
	}
	list := s.ordered(p, id)
	h := uint64(14695981039346656037)
	for _, pr := range list {
		h = (h ^ uint64(pr.i)) * 1099511628211
		h = (h ^ math.Float64bits(pr.price)) * 1099511628211
	}
	o := int32(-1)
	for _, c := range p.orderByHash[h] {
		if slices.EqualFunc(p.orderLists[c], list, samePriced) {
			o = c
			break
		}
	}
	if o < 0 {
		o = int32(len(p.orderLists))
		p.orderLists = append(p.orderLists, list)
		p.orderByHash[h] = append(p.orderByHash[h], o)
	}
	p.orderOf[id] = o
	return o
}

// orderedTypes is the instance types of order ID o (see orderID), cheapest first: the list
// that chooseTypes cuts claims' types from (read-only, like them).
func (s *solver) orderedTypes(p *poolState, o int32) []*InstanceType {
	for int(o) >= len(p.orderTypes) {
		p.orderTypes = append(p.orderTypes, nil)
	}
	if p.orderTypes[o] == nil {
		list := p.orderLists[o]
		its := make([]*InstanceType, len(list))
		for k, pr := range list {
			its[k] = p.its[pr.i]
		}
		p.orderTypes[o] = its
	}
	return p.orderTypes[o]
}

// samePriced compares prices by their bits, as the hash does.
func samePriced(a, b priced) bool {
	return a.i == b.i && math.Float64bits(a.price) == math.Float64bits(b.price)
}

// chooseTypes orders a claim's candidate types by price and keeps the first MaxInstanceTypes,
// plus, past the cap, any type that brings a value minValues still lacks.
func (s *solver) chooseTypes(t *target) *claimTypes {
	var mins []Requirement
	for _, r := range t.reqs.reqs {
		if r.MinValues != nil {
			mins = append(mins, r)
		}
	}
	seen := make([]map[string]bool, len(mins))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	needMore := func() bool {
		for i, r := range mins {
			if len(seen[i]) < *r.MinValues {
				return true
			}
		}
		return false
	}
	ordered := s.ordered(t.pool, t.reqID)
	chosen := s.chosenBuf[:0]
	defer func() { s.chosenBuf = chosen[:0] }()
	// first is the position in ordered of the first type chosen; run stays true while the
	// chosen types are consecutive in ordered.
	first, run := -1, true
	for pos, pr := range ordered {
		if !t.its.has(pr.i) {
			continue
		}
		if first < 0 {
			first = pos
		} else if pos != first+len(chosen) {
			run = false
		}
		if len(chosen) >= s.opts.MaxInstanceTypes {
			adds := false
			for mi, r := range mins {
				if len(seen[mi]) >= *r.MinValues {
					continue
				}
				for _, v := range s.valuesOf(t.pool, pr.i, r.Key) {
					if r.Has(v) && !seen[mi][v] {
						adds = true
					}
				}
			}
			if !adds || !needMore() {
				continue
			}
		}
		chosen = append(chosen, pr)
		for mi, r := range mins {
			for _, v := range s.valuesOf(t.pool, pr.i, r.Key) {
				if r.Has(v) {
					seen[mi][v] = true
				}
			}
		}
	}
	ct := &claimTypes{}
	if run && len(chosen) > 0 && !s.hasMin[t.reqID] {
		// Claims narrowed by size keep a stretch of the price order (the types too small
		// dropped from its cheap end): they share one list of the order's types.
		all := s.orderedTypes(t.pool, s.orderID(t.pool, t.reqID))
		ct.its = all[first : first+len(chosen) : first+len(chosen)]
	} else {
		ct.its = make([]*InstanceType, 0, len(chosen))
		for _, pr := range chosen {
			ct.its = append(ct.its, t.pool.its[pr.i])
		}
	}
	if len(chosen) > 0 {
		ct.price = chosen[0].price
		if len(s.daemons) == 0 {
			ct.overhead = s.ri.list(t.pool.overhead[chosen[0].i]) // zero
		} else {
			ct.overhead = s.ri.list(daemonOverhead(t.pool, chosen))
		}
	}
	// The instance-type requirement lists names sorted; walking the pool's name order avoids a
	// sort per claim.
	chosenBits := bitset(s.bits.take((len(t.pool.its) + 63) / 64))
	for _, pr := range chosen {
		chosenBits.set(pr.i)
	}
	ct.names = make([]string, 0, len(chosen))
	names := s.sortedNames(t.pool)
	for k, i := range t.pool.nameOrder() {
		if chosenBits.has(i) {
			ct.names = append(ct.names, names[k])
		}
	}
	if !t.pool.namesUnique {
		ct.names = dedupSorted(ct.names)
	}
	return ct
}

// daemonOverhead is what a claim of the chosen types requests for its DaemonSets: the least,
// per resource, that the daemons of one of the types request (upstream's minimum over the
// claim's daemon groups), so that no type the claim lists is too small for what it requests.
// A type without daemons makes it zero.
func daemonOverhead(p *poolState, chosen []priced) resVec {
	out := p.overhead[chosen[0].i]
	owned := false
	for _, pr := range chosen[1:] {
		for r, v := range p.overhead[pr.i] {
			if v < out[r] {
				if !owned {
					out, owned = out.clone(), true
				}
				out[r] = v
			}
		}
	}
	return out
}

// offeringCheck is Offering.compatible with the requirement set's zone and capacity-type
// requirements looked up once, for loops over every offering of a pool.
type offeringCheck struct {
	reqs           Requirements
	zone, ct       Requirement
	hasZone, hasCT bool
}

func newOfferingCheck(reqs Requirements) offeringCheck {
	oc := offeringCheck{reqs: reqs}
	oc.zone, oc.hasZone = reqs.Get(LabelZone)
	oc.ct, oc.hasCT = reqs.Get(LabelCapacityType)
	return oc
}

func (oc *offeringCheck) compatible(o *Offering) bool {
	return o.Launchable() && oc.allows(o)
}

// allows reports whether the requirements allow the offering's zone,
// capacity type and further labels, whether or not it can launch now.
func (oc *offeringCheck) allows(o *Offering) bool {
	if (oc.hasZone && !oc.zone.Has(o.Zone)) || (oc.hasCT && !oc.ct.Has(o.CapacityType)) {
		return false
	}
	return o.Requirements.Len() == 0 || oc.reqs.Intersects(o.Requirements) == nil
}
