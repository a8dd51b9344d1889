// Package v1beta1 contains the karpenter.sh/v1beta1 API: NodePool and
// NodeClaim as served before v1.
//
// v1beta1 is never stored: the apiserver stores v1 and calls the conversion
// webhook (pkg/webhook/conversion, using pkg/convert) to translate. The
// generated CRDs therefore mark v1beta1 as not served; the webhook, when
// enabled, installs its CA bundle into the CRDs and switches v1beta1 to served.
// With the webhook disabled, v1beta1 requests fail with "no matches for kind"
// instead of being stored without conversion, which would silently lose the
// fields that moved between versions.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1beta1
