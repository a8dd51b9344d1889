package scheduling

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// CompatibleInstanceTypes reports how many of the pool's instance types its own
// requirements and labels admit, counting only types with an available offering
// those requirements allow. When a requirement's minValues is not met by the
// admitted types and policy is Strict, the pool admits nothing either and
// minValuesShort is true. A pool this returns zero for can launch nothing,
// whatever the pod.
func (np *NodePool) CompatibleInstanceTypes(policy MinValuesPolicy) (count int, minValuesShort bool) {
	reqs, admitted := np.admitted()
	oc := newOfferingCheck(reqs)
	if len(admitted) == 0 || policy == MinValuesPolicyBestEffort {
		return len(admitted), false
	}
	for _, r := range reqs.reqs {
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		for _, it := range admitted {
			for _, v := range instanceTypeValues(it, r.Key, oc) {
				if r.Has(v) {
					seen[v] = true
				}
			}
		}
		if len(seen) < *r.MinValues {
			return 0, true
		}
	}
	return len(admitted), false
}

// instanceTypeValues is the set of values it gives key: zone and capacity type
// from its offerings the requirements allow, the name for the instance-type key,
// else its labels.
func instanceTypeValues(it *InstanceType, key string, oc offeringCheck) []string {
	switch key {
	case LabelZone, LabelCapacityType:
		var out []string
		for oi := range it.Offerings {
			o := &it.Offerings[oi]
			if !oc.compatible(o) {
				continue
			}
			if key == LabelZone {
				out = append(out, o.Zone)
			} else {
				out = append(out, o.CapacityType)
			}
		}
		return out
	case LabelInstanceType:
		return []string{it.Name}
	}
	if r, ok := it.Requirements.Get(key); ok && !r.complement {
		return r.values
	}
	return nil
}

// templateRequirements are the pool's requirements with its labels.
func (np *NodePool) templateRequirements() Requirements {
	reqs := np.Requirements
	for k, v := range np.Labels {
		if _, ok := reqs.Get(k); !ok {
			reqs = reqs.With(NewRequirement(k, corev1.NodeSelectorOpIn, v))
		}
	}
	return reqs
}

// admits reports whether reqs (a pool's template requirements) admit the
// instance type, whatever its offerings.
func admits(reqs Requirements, it *InstanceType) bool {
	if r, ok := reqs.Get(LabelInstanceType); ok && !r.Has(it.Name) {
		return false
	}
	return it.Requirements.intersects(reqs)
}

// admitted returns the pool's requirements with its labels, and its instance
// types those admit with an available offering they allow.
func (np *NodePool) admitted() (Requirements, []*InstanceType) {
	reqs := np.templateRequirements()
	oc := newOfferingCheck(reqs)
	var admitted []*InstanceType
	for _, it := range np.InstanceTypes {
		if !admits(reqs, it) {
			continue
		}
		for oi := range it.Offerings {
			if oc.compatible(&it.Offerings[oi]) {
				admitted = append(admitted, it)
				break
			}
		}
	}
	return reqs, admitted
}

// StaticClaim is a claim for one node of a static NodePool (spec.replicas):
// no pods, any instance type the pool admits, cheapest first (at most
// maxTypes, 0 for DefaultMaxInstanceTypes), priced at its cheapest allowed
// offering. ok is false when the pool admits no instance type.
func (np *NodePool) StaticClaim(maxTypes int) (claim *NewClaim, ok bool) {
	reqs, admitted := np.admitted()
	if len(admitted) == 0 {
		return nil, false
	}
	oc := newOfferingCheck(reqs)
	price := func(it *InstanceType) float64 {
		best := math.Inf(1)
		for oi := range it.Offerings {
			if o := &it.Offerings[oi]; oc.compatible(o) && o.Price < best {
				best = o.Price
			}
		}
		return best
	}
	types := append([]*InstanceType(nil), admitted...)
	sort.SliceStable(types, func(i, j int) bool {
		pi, pj := price(types[i]), price(types[j])
		if pi != pj {
			return pi < pj
		}
		return types[i].Name < types[j].Name
	})
	if maxTypes <= 0 {
		maxTypes = DefaultMaxInstanceTypes
	}
	if len(types) > maxTypes {
		types = types[:maxTypes]
	}
	names := make([]string, len(types))
	for i, it := range types {
		names[i] = it.Name
	}
	reqs = reqs.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, names...))
	return &NewClaim{NodePool: np, Requirements: reqs, InstanceTypes: types, Price: price(types[0])}, true
}

// ReservationsFull reports whether a node of the pool, launched from its bare
// template as a static NodePool's are, can only go into capacity reservations
// with no free slot: every offering its requirements and labels allow, of
// every instance type they admit, launchable or not, is a reserved one that
// cannot launch now. A single allowed offering of another capacity type, even
// an unavailable one, means the node does not wait on a reservation slot.
// offered are the IDs of those reservations still Available (healthy, only
// full): a node holding a slot in one frees a slot the pool can launch into.
// none is true when the pool allows no offering at all (full is then
// vacuously true).
func (np *NodePool) ReservationsFull() (full bool, offered map[string]bool, none bool) {
	reqs := np.templateRequirements()
	oc := newOfferingCheck(reqs)
	offered = map[string]bool{}
	none = true
	for _, it := range np.InstanceTypes {
		if !admits(reqs, it) {
			continue
		}
		for oi := range it.Offerings {
			o := &it.Offerings[oi]
			if !oc.allows(o) {
				continue
			}
			none = false
			if o.CapacityType != CapacityTypeReserved || o.Launchable() {
				return false, nil, false
			}
			if o.Available && o.ReservationID != "" {
				offered[o.ReservationID] = true
			}
		}
	}
	return true, offered, none
}
