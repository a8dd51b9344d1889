// Package nodepool holds the controllers that maintain a NodePool's status and
// annotations:
//
//   - Counter: status.resources, the summed capacity of the NodePool's
//     NodeClaims plus their number under "nodes" (what limits are checked
//     against and what `kubectl get nodepools` shows).
//   - Readiness: the NodeClassReady condition, mirrored from the Ready
//     condition of the NodeClass the NodePool references.
//   - Validation: the ValidationSucceeded condition, for rules the CRD schema
//     cannot express.
//   - Hash: the karpenter.sh/nodepool-hash and -hash-version annotations
//     (v1.NodePool.Hash, which the provisioner also stamps new NodeClaims
//     with) that drift compares against; NodeClaims stamped under
//     another hash version are re-stamped rather than treated as drifted.
//
// NodeClassReady and ValidationSucceeded roll up into Ready (see
// v1.NodePool.StatusConditions); the provisioner launches nothing for a
// NodePool that is not Ready.
package nodepool
