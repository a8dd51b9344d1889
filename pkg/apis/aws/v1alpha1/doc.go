// Package v1alpha1 holds the legacy karpenter.k8s.aws/v1alpha1 API:
// AWSNodeTemplate, the predecessor of EC2NodeClass, and AWS, the provider
// block that v1alpha5 Provisioners could carry inline in spec.provider.
//
// Nothing runs on these types any more; they exist so that old manifests can
// be parsed and converted (cmd/karpenter-convert) and, later, migrated live.
// The API server never validated them with CEL (upstream used a webhook), so
// the schema here is structural only; Validate reproduces the webhook's rules
// for tools that want to warn before converting.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1alpha1
