// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, the AWS-specific
// half of a node's configuration (AMI, subnets, security groups, IAM role,
// kubelet, block devices, instance metadata) that a NodePool points to through
// its nodeClassRef. v1 is the storage version; v1beta1 is served for users who
// have not migrated yet and is converted to and from this version by
// pkg/convert.
//
// Defaults live in the CRD schema and validation in CEL rules on the types, so
// the API server enforces both without a webhook.
//
// The package also owns the provider's well-known labels, annotations and tags
// (labels.go) so that every other package refers to one definition.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
