// Package candidacy maintains the two NodeClaim conditions the disruption
// controller selects candidates by:
//
//   - Consolidatable is True once the NodeClaim is Initialized and its NodePool's
//     spec.disruption.consolidateAfter has passed since the last pod event on the
//     node (status.lastPodEventTime, kept by the podevents controller) or, when
//     no pod event was seen yet, since the NodeClaim was initialized (with 0s it
//     is True from initialization on, whatever the pod events). It is False
//     with a reason while waiting or when consolidateAfter is Never, and absent
//     until the NodeClaim is initialized. The controller requeues exactly when the
//     condition will flip, so consolidation sees it on time without polling.
//   - Drifted is True, with a reason and a message a user can act on, when a
//     launched NodeClaim no longer matches what its NodePool would create today:
//     the NodePool template's hash changed (NodePoolDrifted), the NodeClaim's
//     labels no longer satisfy the NodePool's requirements (RequirementsDrifted),
//     or the cloud provider reports drift (its own reason). Drifted is removed
//     when none of these holds. Drift is re-checked every DriftRecheckInterval,
//     and whenever the NodeClaim, its NodePool or a NodeClass changes.
//
// Static drift compares hashes only when the NodeClaim was stamped with the
// current hash version: a NodeClaim written by another Karpenter (upstream's
// "v3" hashes are computed differently) is re-stamped by the NodePool hash
// controller instead of being reported as drifted.
//
// Both conditions are computed by one controller so a NodeClaim's status is
// written once per pass, and only when one of them changed. The controller
// remembers what it last applied: the informer cache can hand it a copy from
// before that apply, and recomputing from it would write again.
package candidacy
