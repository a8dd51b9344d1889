package instancetype

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// offerings are the ways to buy the type for this class: one per subnet zone
// and capacity type EC2 sells it as. An offering is available when EC2 offers
// the type in the zone, its price is known and it did not recently run out of
// capacity, not every subnet of the class in the zone ran out of addresses,
// and traffic is not shifted away from the zone (shifted, by zone name: an
// ARC zonal shift with ENABLE_ZONAL_SHIFT). zoneReqs carries the zone-id
// requirement of each subnet zone. A price the pricing provider does not
// know is the type's in overlay when there is one (see OverlayPrices).
func offerings(name string, capacityTypes []string, zones []zone, offered map[string]bool, zoneReqs map[string]scheduling.Requirements,
	prices *pricing.Provider, overlay map[string]float64, unavailable *UnavailableOfferings, shifted map[string]bool) []scheduling.Offering {
	out := make([]scheduling.Offering, 0, len(zones)*len(capacityTypes))
	for _, z := range zones {
		for _, ct := range capacityTypes {
			var price float64
			var priced bool
			switch ct {
			case scheduling.CapacityTypeSpot:
				price, priced = prices.SpotPrice(name, z.name)
			case scheduling.CapacityTypeOnDemand:
				price, priced = prices.OnDemandPrice(name)
			default:
				continue
			}
			if !priced {
				price, priced = overlay[name]
			}
			out = append(out, scheduling.Offering{
				Zone:         z.name,
				CapacityType: ct,
				Price:        price,
				Available:    offered[z.name] && priced && !shifted[z.name] && !unavailable.IsUnavailable(ct, name, z.name, z.subnets...),
				Requirements: zoneReqs[z.name],
			})
		}
	}
	return out
}

// zoneRequirements builds, once per class, the requirement each zone's
// offerings carry beyond zone and capacity type: the zone id, so that a pod
// asking for topology.k8s.aws/zone-id gets an offering in that zone.
func zoneRequirements(zones []zone) map[string]scheduling.Requirements {
	out := make(map[string]scheduling.Requirements, len(zones))
	for _, z := range zones {
		if z.id == "" {
			continue
		}
		out[z.name] = scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, z.id))
	}
	return out
}
