// Package v1beta1 holds the karpenter.k8s.aws/v1beta1 API: EC2NodeClass as it
// was before v1. It is served (not stored) so that manifests written for
// v1beta1 keep applying; the API server converts them to v1 through the
// conversion webhook, which calls pkg/convert.
//
// Differences from v1: amiFamily is required and also accepts Ubuntu,
// amiSelectorTerms is optional and has no alias, there is no kubelet (it lived
// on the v1beta1 NodePool), and metadataOptions defaults to a hop limit of 2.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1beta1
