// Package v1 contains the karpenter.sh/v1 API: NodePool and NodeClaim.
//
// v1 is the storage version of both kinds. The v1beta1 package serves the
// previous version; pkg/convert translates between them.
//
// Validation lives in the CRD schema (OpenAPI + CEL) rather than in an
// admission webhook, so the API works without any webhook running.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
