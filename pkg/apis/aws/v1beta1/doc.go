// Package v1beta1 holds the karpenter.k8s.aws/v1beta1 API: EC2NodeClass as it
// was before v1. It is never stored. When the conversion webhook runs, it
// marks this version served in the CRD so that manifests written for v1beta1
// keep applying, and the API server converts them to v1 through the webhook,
// which calls pkg/convert. Without the webhook the version is not served
// (Karpenter itself only uses v1).
//
// Differences from v1: amiFamily is required and also accepts Ubuntu,
// amiSelectorTerms is optional and has no alias, there is no kubelet (it lived
// on the v1beta1 NodePool), and metadataOptions defaults to a hop limit of 2.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1beta1
