// Package convert holds the per-object conversions between the served API
// versions: karpenter.sh NodePool and NodeClaim and karpenter.k8s.aws
// EC2NodeClass, v1beta1 <-> v1. The conversion webhook (pkg/webhook/conversion)
// calls them for every object the API server converts, and karpenter-convert
// (through package migrate) for manifests on disk.
//
// Every function is pure and round-trip safe: what one version cannot say is
// carried in an annotation of the other (the v1beta1 kubelet, v1-only fields,
// a pinned AMI alias, the Ubuntu family v1 dropped) and turned back into
// fields on the way back, so v1beta1 -> v1 -> v1beta1 and v1 -> v1beta1 -> v1
// return the object they started from (fuzzed in the *_random_test.go files).
// Migration of the legacy v1alpha5/v1alpha1 kinds, which may rewrite several
// objects at once, lives in the migrate subpackage.
package convert
