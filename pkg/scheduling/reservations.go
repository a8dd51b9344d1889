package scheduling

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// ReservationsFullError is why a pod whose claim could only launch into capacity reservations
// was not placed: every reservation its claim could use had its free slots taken by earlier
// claims of the same decision. The pod is not unschedulable; a later decision, once the
// provider's counts move or a slot frees, may place it.
type ReservationsFullError struct {
	NodePool string
}

func (e *ReservationsFullError) Error() string {
	return fmt.Sprintf("NodePool %q: every capacity reservation this pod's node could launch into is fully booked by other new nodes of this decision, and the NodePool allows no other capacity type", e.NodePool)
}

// reservationBook counts, for one Solve, the slots left in each counted reservation.
type reservationBook struct {
	left map[string]int
}

// newReservationBook reads every counted reserved offering of the pools; nil when there is none,
// so that a solve without reservations pays one scan of its offerings and nothing more. Offerings
// of one reservation that disagree (pools read at different times) count its smallest figure.
func newReservationBook(pools []*NodePool) *reservationBook {
	var b *reservationBook
	for _, np := range pools {
		for _, it := range np.InstanceTypes {
			for oi := range it.Offerings {
				o := &it.Offerings[oi]
				if o.CapacityType != CapacityTypeReserved || o.ReservationID == "" {
					continue
				}
				if b == nil {
					b = &reservationBook{left: map[string]int{}}
				}
				if n, ok := b.left[o.ReservationID]; !ok || o.ReservationCapacity < n {
					b.left[o.ReservationID] = max(o.ReservationCapacity, 0)
				}
			}
		}
	}
	return b
}

// bookReservations walks the new claims in the order they were opened and gives each claim whose
// requirements allow reserved capacity one slot of its cheapest compatible reservation that still
// has one: the claim is narrowed to that reservation (capacity type reserved, and the
// reservation's own labels, such as its ID and zone), so it cannot launch anywhere else. A claim
// that finds every compatible reservation booked falls back to the other capacity types its
// NodePool and pods allow (upstream's ReservationManager gives the same guarantee: one decision
// never plans more nodes into a reservation than it has free); without one its pods are not
// placed, with a ReservationsFullError.
func (r *Results) bookReservations(b *reservationBook) {
	if b == nil || len(r.NewClaims) == 0 {
		return
	}
	kept := r.NewClaims[:0]
	for _, c := range r.NewClaims {
		if b.book(c) {
			kept = append(kept, c)
			continue
		}
		if r.PodErrors == nil {
			r.PodErrors = map[*corev1.Pod]error{}
		}
		for _, p := range c.Pods {
			r.PodErrors[p] = &ReservationsFullError{NodePool: c.NodePool.Name}
		}
	}
	for i := len(kept); i < len(r.NewClaims); i++ {
		r.NewClaims[i] = nil
	}
	r.NewClaims = kept
}

// book settles one claim; false when it can launch nowhere.
func (b *reservationBook) book(c *NewClaim) bool {
	if !c.Requirements.Has(LabelCapacityType, CapacityTypeReserved) {
		return true
	}
	var best *Offering
	counted := false
	for _, it := range c.InstanceTypes {
		for oi := range it.Offerings {
			o := &it.Offerings[oi]
			if o.CapacityType != CapacityTypeReserved || o.ReservationID == "" || !o.compatible(c.Requirements) {
				continue
			}
			counted = true
			if b.left[o.ReservationID] > 0 && (best == nil || o.Price < best.Price) {
				best = o
			}
		}
	}
	if !counted {
		return true
	}
	if best != nil {
		b.left[best.ReservationID]--
		reqs := c.Requirements.Intersect(best.Requirements).
			With(NewRequirement(LabelCapacityType, corev1.NodeSelectorOpIn, CapacityTypeReserved)).
			With(NewRequirement(LabelZone, corev1.NodeSelectorOpIn, best.Zone))
		its, price := launchableTypes(c.InstanceTypes, reqs)
		c.Requirements, c.InstanceTypes, c.Price = withTypes(reqs, its, len(c.InstanceTypes)), its, price
		return true
	}
	// No slot left: fall back to what else the claim may buy.
	var others []string
	if ct, ok := c.Requirements.Get(LabelCapacityType); ok && !ct.negative() {
		for _, v := range ct.Values() {
			if v != CapacityTypeReserved {
				others = append(others, v)
			}
		}
	} else {
		seen := map[string]bool{}
		for _, it := range c.InstanceTypes {
			for oi := range it.Offerings {
				if v := it.Offerings[oi].CapacityType; v != CapacityTypeReserved && !seen[v] && c.Requirements.Has(LabelCapacityType, v) {
					seen[v] = true
					others = append(others, v)
				}
			}
		}
	}
	if len(others) == 0 {
		return false
	}
	reqs := c.Requirements.Without(LabelCapacityType).With(NewRequirement(LabelCapacityType, corev1.NodeSelectorOpIn, others...))
	its, price := launchableTypes(c.InstanceTypes, reqs)
	if len(its) == 0 {
		return false
	}
	c.Requirements, c.InstanceTypes, c.Price = withTypes(reqs, its, len(c.InstanceTypes)), its, price
	return true
}

// withTypes narrows the instance-type requirement to its when they are fewer than the claim had.
func withTypes(reqs Requirements, its []*InstanceType, had int) Requirements {
	if len(its) == had {
		return reqs
	}
	names := make([]string, len(its))
	for i, it := range its {
		names[i] = it.Name
	}
	return reqs.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, names...))
}

// launchableTypes keeps the types with an offering reqs allow, cheapest such offering first
// (stable otherwise), and the cheapest price. It returns a new slice: claims share theirs.
func launchableTypes(its []*InstanceType, reqs Requirements) ([]*InstanceType, float64) {
	type priced struct {
		it    *InstanceType
		price float64
	}
	var ps []priced
	for _, it := range its {
		best, ok := 0.0, false
		for oi := range it.Offerings {
			if o := &it.Offerings[oi]; o.compatible(reqs) && (!ok || o.Price < best) {
				best, ok = o.Price, true
			}
		}
		if ok {
			ps = append(ps, priced{it, best})
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].price < ps[j].price })
	out := make([]*InstanceType, len(ps))
	for i := range ps {
		out[i] = ps[i].it
	}
	if len(ps) == 0 {
		return out, 0
	}
	return out, ps[0].price
}
