// Package why is `kubectl karpenter why`: one pod, node or NodeClaim
// explained with the controller's own code on a snapshot of the cluster. A
// pending pod gets each NodePool's reason from the solver (requirements,
// taints, limits, topology, size) and, per pool, the instance type that comes
// closest and what it lacks. A node or NodeClaim gets what the disruption
// pass would do with it (the decision, or the same explanation as its
// DisruptionBlocked condition) and why its instance type was chosen over the
// cheaper ones and the next cheapest.
package why
