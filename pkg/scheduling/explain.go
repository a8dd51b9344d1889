package scheduling

import (
	"fmt"
	"sort"
	"strings"
)

// explainTypes says why no instance type of a claim's pool can take the pod: a requirement no
// instance type meets, no available offering in the required zones/capacity types, or size.
func (s *solver) explainTypes(t *target, id int32, req resVec) error {
	p := t.pool
	reqs := s.reqByID[id]
	compat := s.compatible(p, id).and(t.its)
	if compat.empty() {
		// Which key rules the types out? Report the one that rejects the most types.
		byKey := map[string]int{}
		var firstErr = map[string]error{}
		offeringsOnly := 0
		t.its.forEach(func(i int) {
			if err := s.itRequirements(p, i).Intersects(reqs); err != nil {
				k := err.(*IncompatibleError).Key
				byKey[k]++
				if firstErr[k] == nil {
					firstErr[k] = err
				}
				return
			}
			offeringsOnly++
		})
		if offeringsOnly > 0 {
			var parts []string
			for _, key := range []string{LabelZone, LabelCapacityType} {
				want, ok := reqs.Get(key)
				if !ok {
					continue
				}
				have := map[string]bool{}
				t.its.forEach(func(i int) {
					for _, v := range s.valuesOf(p, i, key) {
						have[v] = true
					}
				})
				var vals []string
				ok = false
				for v := range have {
					vals = append(vals, v)
					if want.Has(v) {
						ok = true
					}
				}
				sort.Strings(vals)
				if !ok {
					parts = append(parts, fmt.Sprintf("requires %s %s, but offerings are only in [%s]", key, want.String(), strings.Join(vals, ",")))
				}
			}
			if len(parts) == 0 {
				parts = append(parts, "no available offering matches requirements "+reqs.String())
			}
			return fmt.Errorf("%s", strings.Join(parts, "; "))
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if byKey[keys[i]] != byKey[keys[j]] {
				return byKey[keys[i]] > byKey[keys[j]]
			}
			return keys[i] < keys[j]
		})
		if len(keys) == 0 {
			return fmt.Errorf("no instance types available")
		}
		return fmt.Errorf("no instance type satisfies the requirements: %v", firstErr[keys[0]])
	}
	need := t.used.clone()
	need.add(req)
	if s.hasMin[id] && s.opts.MinValuesPolicy == MinValuesPolicyStrict {
		fits := newBitset(len(p.its))
		compat.forEach(func(i int) {
			if need.fitsIn(p.alloc[i]) {
				fits.set(i)
			}
		})
		if !fits.empty() {
			if msg, short := s.minValuesShortfall(p, id, fits); short {
				return fmt.Errorf("%s", msg)
			}
		}
	}
	largest := s.maxAlloc(p, compat)
	note := ""
	if p.limited != nil && compat.count() < s.compatible(p, id).count() {
		note = "; larger instance types exceed the nodepool's remaining limits"
	}
	return fmt.Errorf("no instance type fits requests {%s} (largest allocatable after daemonset overhead {%s}%s)",
		FormatResources(s.ri.list(need)), FormatResources(s.ri.list(largest)), note)
}
