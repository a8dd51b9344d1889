// Package capacityreservation resolves an EC2NodeClass's
// capacityReservationSelectorTerms to EC2 capacity reservations (On-Demand
// Capacity Reservations and Capacity Blocks) through
// DescribeCapacityReservations.
//
// Terms are ORed and the fields of one term ANDed, as for subnets: a term
// with tags, ownerID and instanceMatchCriteria becomes one request whose
// filters EC2 ANDs; terms with an id are grouped into one
// capacity-reservation-id request (a filter, not CapacityReservationIds, so
// that one missing id cannot fail the others). Every request also asks for
// state=active: a pending, expired or cancelled reservation cannot take
// instances. Answers are cached per request, so classes sharing a term share
// the call. The result says which terms matched nothing, for the
// controller's condition.
package capacityreservation
