package disruption

import (
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// TerminateFirstNoReservedCapacity: the node runs in a capacity reservation
// with no free slot, and its pods can only go back into that reservation, so
// its replacement can launch only once its own slot is freed.
const TerminateFirstNoReservedCapacity = "no-reserved-capacity"

// reservationOf is the capacity reservation the node runs in: the reserved
// offering of its NodePool's instance types whose labels (reservation ID,
// zone) the node carries; "" for a node in none.
func (p *pass) reservationOf(n *node) string {
	labels := n.labels()
	if labels[scheduling.LabelCapacityType] != scheduling.CapacityTypeReserved || n.pool == nil {
		return ""
	}
	name := labels[scheduling.LabelInstanceType]
	for _, it := range n.pool.InstanceTypes {
		if it.Name != name {
			continue
		}
		for oi := range it.Offerings {
			o := &it.Offerings[oi]
			if o.CapacityType != scheduling.CapacityTypeReserved || o.ReservationID == "" || labels[scheduling.LabelZone] != o.Zone || !carries(labels, o.Requirements) {
				continue
			}
			return o.ReservationID
		}
	}
	return ""
}

// carries reports whether labels meet every requirement of reqs.
func carries(labels map[string]string, reqs scheduling.Requirements) bool {
	for _, r := range reqs.All() {
		v, ok := labels[r.Key]
		if !ok || !r.Has(v) {
			return false
		}
	}
	return true
}

// fitsOnceFreed reports whether the pods of n, which cannot be rescheduled
// while it runs, can be once it is gone and its reservation slot is free
// again: the terminate-first check of upstream's drift and repair
// (TerminateFirstDrift, TerminateFirstRepair). Only the candidate's own slot
// is credited, so a reservation unusable for another reason stays so.
func (p *pass) fitsOnceFreed(n *node, reservation string) bool {
	p.credit = reservation
	defer func() { p.credit = "" }()
	sim, _ := p.simulate([]*node{n}, nil)
	return sim != nil && sim.ok
}

// creditedPools are the pools with the credited reservation's offerings
// holding one more free slot. The pools, their types and offerings are copied
// where they change: the input is shared.
func creditedPools(pools []*scheduling.NodePool, reservation string) []*scheduling.NodePool {
	out := make([]*scheduling.NodePool, len(pools))
	for i, np := range pools {
		out[i] = np
		var its []*scheduling.InstanceType
		for j, it := range np.InstanceTypes {
			hit := -1
			for oi := range it.Offerings {
				if o := &it.Offerings[oi]; o.CapacityType == scheduling.CapacityTypeReserved && o.ReservationID == reservation {
					hit = oi
					break
				}
			}
			if hit < 0 {
				continue
			}
			if its == nil {
				its = append([]*scheduling.InstanceType(nil), np.InstanceTypes...)
			}
			cp := *it
			cp.Offerings = append([]scheduling.Offering(nil), it.Offerings...)
			for oi := range cp.Offerings {
				if o := &cp.Offerings[oi]; o.CapacityType == scheduling.CapacityTypeReserved && o.ReservationID == reservation {
					o.ReservationCapacity = max(o.ReservationCapacity, 0) + 1
				}
			}
			its[j] = &cp
		}
		if its != nil {
			cp := *np
			cp.InstanceTypes = its
			out[i] = &cp
		}
	}
	return out
}

// staticReservations reports, for a node of a static NodePool, whether the
// pool's replacement can only go into full capacity reservations (see
// scheduling.NodePool.ReservationsFull: a static node is launched from the
// bare template, so this looks at offerings, not at a simulation); none when
// the template allows no offering at all; held, the still-offered
// reservation the node holds a slot in ("" for none).
func (p *pass) staticReservations(n *node) (full, none bool, held string) {
	np := n.pool.NodePool
	reqs := make([]scheduling.Requirement, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	full, offered, none := (&scheduling.NodePool{Name: np.Name, Requirements: scheduling.NewRequirements(reqs...), Labels: np.Spec.Template.ObjectMeta.Labels, InstanceTypes: n.pool.InstanceTypes}).ReservationsFull()
	if !full {
		return false, false, ""
	}
	if id := p.reservationOf(n); offered[id] {
		held = id
	}
	return true, none, held
}
