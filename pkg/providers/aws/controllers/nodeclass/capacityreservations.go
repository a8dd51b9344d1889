package nodeclass

import (
	"context"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// CapacityReservationRefreshInterval is how often reservations are read
// again: their availability and a Capacity Block's expiry change over time.
const CapacityReservationRefreshInterval = time.Minute

// ReasonCapacityReservationsNotFound: a capacityReservationSelectorTerm
// matched no active reservation.
const ReasonCapacityReservationsNotFound = "CapacityReservationsNotFound"

// ReasonReservedCapacityDisabled: the feature gate ReservedCapacity is off,
// so capacityReservationSelectorTerms are not resolved (and do not keep the
// class from Ready).
const ReasonReservedCapacityDisabled = "ReservedCapacityDisabled"

// resolveCapacityReservations writes status.capacityReservations. Unlike
// subnets, a term that matches nothing makes the condition False: the
// reservations are what the class was written for, so a missing one is not
// a typo to shrug off. The condition only gates Ready when terms are present
// (see EC2NodeClass.StatusConditions).
func (c *Controller) resolveCapacityReservations(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	if len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
		nc.Status.CapacityReservations = nil
		conds.SetTrue(v1.ConditionTypeCapacityReservationsReady)
		return 0, nil
	}
	if c.DisableReservedCapacity {
		nc.Status.CapacityReservations = nil
		conds.SetTrueWithReason(v1.ConditionTypeCapacityReservationsReady, ReasonReservedCapacityDisabled,
			"capacityReservationSelectorTerms are ignored: the feature gate ReservedCapacity is disabled")
		return 0, nil
	}
	res, err := c.providers.CapacityReservations.List(ctx, nc.Spec.CapacityReservationSelectorTerms)
	if err != nil {
		setUnknownUnlessTrue(nc, conds, v1.ConditionTypeCapacityReservationsReady, ReasonResolutionFailed, err)
		return 0, err
	}
	now := c.clock.Now()
	var out []v1.CapacityReservation
	for _, r := range res.Reservations {
		out = append(out, r.Status(now))
	}
	nc.Status.CapacityReservations = out
	if len(res.Unmatched) > 0 {
		conds.SetFalse(v1.ConditionTypeCapacityReservationsReady, ReasonCapacityReservationsNotFound, res.UnmatchedMessage())
		return CapacityReservationRefreshInterval, nil
	}
	conds.SetTrue(v1.ConditionTypeCapacityReservationsReady)
	return CapacityReservationRefreshInterval, nil
}
