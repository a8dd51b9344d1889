// Package expiration deletes a NodeClaim once it has lived for its
// spec.expireAfter (counted from its creation; "Never" disables it).
//
// Expiration is forceful: it is not limited by disruption budgets and does not
// wait for replacement capacity. Deleting the NodeClaim starts the normal
// termination (the node is tainted and drained, honouring PodDisruptionBudgets
// and do-not-disrupt pods until the NodeClaim's terminationGracePeriod); the
// evicted pods go pending and the provisioner launches their new capacity.
// A user who wants drained-before-replaced rolling uses drift instead.
//
// Each expiry records a Disrupted event on the NodeClaim (and its Node) and
// counts karpenter_nodeclaims_disrupted_total{reason="expired"}. The
// controller requeues at the exact expiry time on its clock.
package expiration
