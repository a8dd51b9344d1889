// Package migrate is the offline migration behind the karpenter-convert
// command: it reads manifests (multi-document YAML, JSON, kind: List, stdin,
// directories), turns every legacy Karpenter object into its v1beta1 or v1
// successor, and lists the breaking changes that touch the inputs.
//
// It differs from the per-object conversions in package convert, which the
// conversion webhook uses and which must round-trip: a migration sees the
// whole set of manifests at once and may rewrite more than one object for
// one input (a Provisioner with an inline provider becomes a NodePool and an
// EC2NodeClass; the kubelet of several NodePools moves onto their
// EC2NodeClass, which is split when they disagree). It also writes out
// behaviour that only used to be a default (the IMDS hop limit of 2, a
// consolidation policy) so that the new version behaves like the old one.
// The per-field copying is delegated to package convert wherever the
// semantics are the same.
package migrate
