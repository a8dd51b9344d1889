// Package v1alpha5 contains the legacy karpenter.sh/v1alpha5 API: Provisioner
// and Machine, as served by Karpenter before v0.32. Karpenter no longer acts
// on them; they are kept with their full schema so that the convert tool can
// read old manifests and live migration can read old objects.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha5
