// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the
// instance types a cloud provider returns: Evaluate decides, for every
// NodePool's instance types, which overlay sets the price of which offering
// and which extended resources each type gains, and which overlays are
// invalid or in conflict; a Store holds the last evaluation, and Decorate
// wraps a CloudProvider so that GetInstanceTypes returns the types as
// overlaid. The overlay controller (pkg/controllers/nodeoverlay) evaluates;
// kubectl-karpenter evaluates the overlays of a snapshot the same way.
package overlay

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Pool is a NodePool with the instance types the cloud provider returns for
// it (before any overlay).
type Pool struct {
	NodePool      *v1.NodePool
	InstanceTypes []*scheduling.InstanceType
}

// Evaluation is the outcome of evaluating the overlays against the pools.
type Evaluation struct {
	// Invalid are the overlays that failed Validate, by name.
	Invalid map[string]error
	// Conflicts are the overlays not applied because an overlay of equal
	// weight already sets the price of an offering or a capacity resource of
	// an instance type they select: by name, the names of those overlays.
	Conflicts map[string][]string
	// Applied are the overlays applied to at least one instance type.
	Applied map[string]bool

	updates   map[string]map[string]*typeUpdate // nodepool -> instance type -> update
	evaluated map[string]bool
}

// typeUpdate is what the overlays do to one instance type of one pool.
type typeUpdate struct {
	prices   map[string]PriceChange // offering key -> change
	capacity corev1.ResourceList
}

// claim is the lowest weight that touched an offering's price or a capacity
// resource, and the overlay that did. Overlays are evaluated by descending
// weight, so an overlay meeting a claim of its own weight conflicts.
type claim struct {
	weight int32
	name   string
}

// Order sorts overlays as they are evaluated: higher weight first (an
// overlay without a weight counts as 0), ties by name in reverse, as
// upstream orders them.
func Order(overlays []v1alpha1.NodeOverlay) {
	sort.SliceStable(overlays, func(a, b int) bool {
		wa, wb := weight(&overlays[a]), weight(&overlays[b])
		if wa == wb {
			return overlays[a].Name > overlays[b].Name
		}
		return wa > wb
	})
}

func weight(o *v1alpha1.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// Evaluate decides what the overlays do to the pools' instance types.
// undefinedOK says which label keys an overlay may require although an
// instance type does not define them (well-known labels an offering or the
// provider supplies, such as the zone). An overlay is applied to every pool
// or to none: if it conflicts on one instance type of one pool, it is
// applied nowhere.
func Evaluate(overlays []v1alpha1.NodeOverlay, pools []Pool, undefinedOK func(string) bool) *Evaluation {
	ordered := slices.Clone(overlays)
	Order(ordered)
	ev := &Evaluation{
		Invalid:   map[string]error{},
		Conflicts: map[string][]string{},
		Applied:   map[string]bool{},
		updates:   map[string]map[string]*typeUpdate{},
		evaluated: map[string]bool{},
	}
	for _, p := range pools {
		ev.evaluated[p.NodePool.Name] = true
	}
	priceClaims := map[string]*claim{}    // pool/type/offering -> claim
	capacityClaims := map[string]*claim{} // pool/type/resource -> claim
	for i := range ordered {
		o := &ordered[i]
		if err := Validate(o); err != nil {
			ev.Invalid[o.Name] = err
			continue
		}
		var change *PriceChange
		for _, p := range []*string{o.Spec.Price, o.Spec.PriceAdjustment} {
			if p != nil {
				c, _ := ParsePriceChange(*p)
				change = &c
			}
		}
		w := weight(o)
		reqs := requirements(o)
		type hit struct {
			pool      string
			it        *scheduling.InstanceType
			offerings []int
		}
		var hits []hit
		conflicts := map[string]bool{}
		for _, p := range pools {
			for _, it := range p.InstanceTypes {
				offs := Selected(p.NodePool, it, reqs, undefinedOK)
				if len(offs) == 0 {
					continue
				}
				hits = append(hits, hit{pool: p.NodePool.Name, it: it, offerings: offs})
				if change != nil {
					for _, oi := range offs {
						if c := priceClaims[offeringClaimKey(p.NodePool.Name, it, oi)]; c != nil && c.weight == w {
							conflicts[c.name] = true
						}
					}
				}
				for name := range o.Spec.Capacity {
					if c := capacityClaims[p.NodePool.Name+"/"+it.Name+"/"+string(name)]; c != nil && c.weight == w {
						conflicts[c.name] = true
					}
				}
			}
		}
		if len(conflicts) > 0 {
			names := make([]string, 0, len(conflicts))
			for n := range conflicts {
				names = append(names, n)
			}
			slices.Sort(names)
			ev.Conflicts[o.Name] = names
			continue
		}
		for _, h := range hits {
			u := ev.update(h.pool, h.it.Name)
			if change != nil {
				for _, oi := range h.offerings {
					k := offeringClaimKey(h.pool, h.it, oi)
					if c := priceClaims[k]; c != nil {
						// A higher weight set this offering's price first.
						c.weight, c.name = w, o.Name
						continue
					}
					priceClaims[k] = &claim{weight: w, name: o.Name}
					u.prices[offeringKey(&h.it.Offerings[oi])] = *change
					ev.Applied[o.Name] = true
				}
			}
			for name, q := range o.Spec.Capacity {
				k := h.pool + "/" + h.it.Name + "/" + string(name)
				if c := capacityClaims[k]; c != nil {
					c.weight, c.name = w, o.Name
					continue
				}
				capacityClaims[k] = &claim{weight: w, name: o.Name}
				u.capacity[name] = q.DeepCopy()
				ev.Applied[o.Name] = true
			}
		}
	}
	return ev
}

func (ev *Evaluation) update(pool, it string) *typeUpdate {
	byType := ev.updates[pool]
	if byType == nil {
		byType = map[string]*typeUpdate{}
		ev.updates[pool] = byType
	}
	u := byType[it]
	if u == nil {
		u = &typeUpdate{prices: map[string]PriceChange{}, capacity: corev1.ResourceList{}}
		byType[it] = u
	}
	return u
}

// Selected returns the offerings (their indices) of the pool's instance type
// that the overlay requirements reqs select, none when they do not select
// the instance type. The type is matched with the pool's name and template
// labels, as its nodes would carry them; an offering with its zone, capacity
// type and further requirements.
func Selected(np *v1.NodePool, it *scheduling.InstanceType, reqs scheduling.Requirements, undefinedOK func(string) bool) []int {
	labels := map[string]string{}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[v1.NodePoolLabelKey] = np.Name
	base := scheduling.FromLabels(labels).Intersect(it.Requirements).With(scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, it.Name))
	if base.Compatible(reqs, undefinedOK) != nil {
		return nil
	}
	var out []int
	for i := range it.Offerings {
		o := &it.Offerings[i]
		offReqs := scheduling.NewRequirements(
			scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, o.Zone),
			scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, o.CapacityType),
		).Intersect(o.Requirements)
		if reqs.Intersects(offReqs) == nil {
			out = append(out, i)
		}
	}
	return out
}

// offeringKey identifies an offering within its instance type across calls
// of GetInstanceTypes.
func offeringKey(o *scheduling.Offering) string {
	return o.Zone + "\x00" + o.CapacityType + "\x00" + o.Requirements.String()
}

func offeringClaimKey(pool string, it *scheduling.InstanceType, i int) string {
	return pool + "/" + it.Name + "/" + offeringKey(&it.Offerings[i])
}

// ConflictMessage is the message of a Conflict condition.
func ConflictMessage(with []string) string {
	return fmt.Sprintf("conflict with another overlay: NodeOverlay %s of equal weight sets the price or capacity of an instance type or offering this overlay selects; give one of them a different weight or narrow their requirements", strings.Join(with, ", "))
}

// WellKnown returns an undefinedOK for Evaluate: Karpenter's well-known
// labels and the provider's extra.
func WellKnown(extra ...string) func(string) bool {
	set := map[string]bool{}
	for _, k := range scheduling.DefaultWellKnownLabels {
		set[k] = true
	}
	for _, k := range extra {
		set[k] = true
	}
	return func(k string) bool { return set[k] }
}
