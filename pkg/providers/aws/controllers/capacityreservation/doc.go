// Package capacityreservation keeps NodeClaims in step with the capacity
// reservations they launched into, as upstream's two controllers of that name
// do, each a leader-only pass every minute:
//
//   - expiration deletes the NodeClaims of a Capacity Block that is expiring
//     (within capacityreservation.ExpirationBuffer, 40 minutes, of its end):
//     EC2 starts reclaiming a block's instances 30 minutes before its end, and
//     deleting first drains them through Karpenter, within PDBs, instead;
//   - capacitytype relabels a NodeClaim (and its registered Node) whose
//     instance EC2 now reports as on-demand, as happens when an On-Demand
//     Capacity Reservation ends under a running instance: karpenter.sh/
//     capacity-type becomes on-demand and the reservation labels go, so
//     scheduling, pricing and consolidation stop treating it as reserved.
package capacityreservation
