package instancetype

import (
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// ReservedPriceFactor scales the on-demand price into a reserved offering's
// price. Reserved capacity is already paid for, so it should be close to
// free for the solver (always preferred over spot and on-demand), yet keep the
// on-demand order between types so that the cheaper reserved type still wins
// among several reservations.
const ReservedPriceFactor = 1.0 / 10_000_000

// reservedOfferings are one offering per usable reservation of the type: a
// reservation in one of the class's subnet zones that is active (an expiring
// Capacity Block takes no new instances). Their requirements add the
// reservation's id, type and interruptibility to the zone's, so a NodePool can
// ask for a particular reservation. A reservation in a zone traffic is
// shifted away from (shifted, by zone name) is unavailable while the shift
// lasts, as upstream's; subnets running out of addresses do not touch
// reserved offerings (upstream's neither).
//
// Each carries the reservation's free slots as counts tell them: a
// reservation counts do not know is taken as full, as upstream does (it
// learns the figure when the EC2NodeClass controller describes the
// reservation). A full reservation stays Available, but is not Launchable.
func reservedOfferings(name string, reservations []awsv1.CapacityReservation, zoneReqs map[string]scheduling.Requirements, inZone map[string]bool,
	prices *pricing.Provider, unavailable *UnavailableOfferings, shifted map[string]bool, counts ReservationCounts) []scheduling.Offering {
	var out []scheduling.Offering
	for _, r := range reservations {
		if r.InstanceType != name || !inZone[r.AvailabilityZone] {
			continue
		}
		od, _ := prices.OnDemandPrice(name)
		free := math.MaxInt32
		if counts != nil {
			free, _ = counts.Count(r.ID)
		}
		reqs := zoneReqs[r.AvailabilityZone].
			With(scheduling.NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, r.ID)).
			With(scheduling.NewRequirement(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, string(reservationType(r)))).
			With(scheduling.NewRequirement(awsv1.LabelCapacityReservationInterruptible, corev1.NodeSelectorOpIn, strconv.FormatBool(r.Interruptible)))
		out = append(out, scheduling.Offering{
			Zone:         r.AvailabilityZone,
			CapacityType: scheduling.CapacityTypeReserved,
			// Without an on-demand price the reservation is still usable; a
			// price of zero keeps it first.
			Price: od * ReservedPriceFactor,
			Available: r.State != awsv1.CapacityReservationStateExpiring && !shifted[r.AvailabilityZone] &&
				!unavailable.IsUnavailable(scheduling.CapacityTypeReserved, name, r.AvailabilityZone),
			Requirements:        reqs,
			ReservationID:       r.ID,
			ReservationCapacity: free,
		})
	}
	return out
}

func reservationType(r awsv1.CapacityReservation) awsv1.CapacityReservationType {
	if r.ReservationType == "" {
		return awsv1.CapacityReservationTypeDefault
	}
	return r.ReservationType
}

// classReservations copies the class's resolved reservations, sorted by id so
// equal statuses give equal cache keys and offering orders.
func classReservations(nc *awsv1.EC2NodeClass) []awsv1.CapacityReservation {
	out := make([]awsv1.CapacityReservation, len(nc.Status.CapacityReservations))
	for i, r := range nc.Status.CapacityReservations {
		out[i] = *r.DeepCopy()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// withReservations widens a type's requirements for the reservations the
// class holds for it: capacity type reserved joins spot and on-demand, and the
// reservation labels (absent for types without reservations) take the values
// of its reservations. Each reserved offering narrows them to one reservation.
func withReservations(reqs scheduling.Requirements, name string, reservations []awsv1.CapacityReservation, inZone map[string]bool) scheduling.Requirements {
	var ids, types, interruptible []string
	for _, r := range reservations {
		if r.InstanceType != name || !inZone[r.AvailabilityZone] {
			continue
		}
		ids = append(ids, r.ID)
		types = append(types, string(reservationType(r)))
		interruptible = append(interruptible, strconv.FormatBool(r.Interruptible))
	}
	if len(ids) == 0 {
		return reqs
	}
	capacityTypes := []string{scheduling.CapacityTypeReserved}
	if ct, ok := reqs.Get(scheduling.LabelCapacityType); ok {
		capacityTypes = append(capacityTypes, ct.Values()...)
	}
	return reqs.
		Without(scheduling.LabelCapacityType).With(scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, capacityTypes...)).
		Without(awsv1.LabelCapacityReservationID).With(scheduling.NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, ids...)).
		Without(awsv1.LabelCapacityReservationType).With(scheduling.NewRequirement(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, types...)).
		Without(awsv1.LabelCapacityReservationInterruptible).With(scheduling.NewRequirement(awsv1.LabelCapacityReservationInterruptible, corev1.NodeSelectorOpIn, interruptible...))
}
