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

// admitted returns the pool's requirements with its labels, and its instance
// types those admit with an available offering they allow.
func (np *NodePool) admitted() (Requirements, []*InstanceType) {
	reqs := np.Requirements
	for k, v := range np.Labels {
		if _, ok := reqs.Get(k); !ok {
			reqs = reqs.With(NewRequirement(k, corev1.NodeSelectorOpIn, v))
		}
	}
	oc := newOfferingCheck(reqs)
	itReq, constrainsType := reqs.Get(LabelInstanceType)
	var admitted []*InstanceType
	for _, it := range np.InstanceTypes {
		if (constrainsType && !itReq.Has(it.Name)) || !it.Requirements.intersects(reqs) {
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
