// Package tagging finishes an instance's tags once its NodeClaim has
// registered a Node, as upstream Karpenter does: Name (the node name, which
// on EC2 is the private DNS name and so unknown at launch),
// karpenter.sh/nodeclaim and eks:eks-cluster-name. Tags the instance already
// carries (a Name from spec.tags, for instance) are left as they are. The
// NodeClaim is then annotated karpenter.k8s.aws/tagged=true and not looked at
// again.
//
// CreateTags shares EC2's mutating-call rate limit with CreateFleet and
// TerminateInstances, so tagging is paced (one call per second by default,
// as upstream) and never competes with launches for that budget.
package tagging
