// Package conversion is the CRD conversion webhook that serves
// karpenter.sh/v1beta1 (NodePool, NodeClaim) and karpenter.k8s.aws/v1beta1
// (EC2NodeClass) on top of the v1 storage version.
//
// The apiserver sends ConversionReviews (apiextensions.k8s.io/v1) over TLS.
// The webhook manages its own certificate: a CA and a serving certificate are
// generated once and kept in a Secret (or handed in by the caller), and the CA
// is written into each CRD's spec.conversion.webhook.clientConfig.caBundle
// together with served: true for v1beta1. Conversion itself is the pure
// functions of pkg/convert.
//
// Disabled webhook: Karpenter only reads and writes v1 and works unchanged.
// The generated CRDs mark v1beta1 as not served, so while the webhook is off
// (or was never enabled) v1beta1 requests are refused with "no matches for
// kind" rather than stored without conversion, which would silently drop the
// fields that moved between versions (expireAfter, kubelet, nodeClassRef).
// Objects are always stored as v1, so turning the webhook off later loses
// nothing; EnableConversion and DisableConversion switch between the two
// states on a running cluster.
package conversion
