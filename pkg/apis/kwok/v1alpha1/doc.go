// Package v1alpha1 contains karpenter.kwok.sh/v1alpha1 KWOKNodeClass, the
// NodeClass of the simulated KWOK cloud provider, whose "instances" are Node
// objects faked by KWOK.
// +kubebuilder:object:generate=true
// +groupName=karpenter.kwok.sh
package v1alpha1
