package amifamily

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// Variant is the accelerator flavor of an EKS-optimized AMI.
type Variant string

// Variants, as upstream names them (and as the SSM paths of AL2023 spell them).
const (
	// VariantStandard runs on instance types without GPUs or accelerators.
	VariantStandard Variant = "standard"
	// VariantNvidia carries NVIDIA drivers: instance types with GPUs.
	VariantNvidia Variant = "nvidia"
	// VariantNeuron carries the AWS Neuron driver: Inferentia/Trainium types.
	VariantNeuron Variant = "neuron"
	// VariantWindows is the one Windows Server Core AMI of a Windows family.
	VariantWindows Variant = "windows"
)

// Requirements are the node requirements (besides the architecture) an
// instance type must meet to boot an AMI of this variant, expressed as
// upstream does: a standard AMI needs an instance type without GPU or
// accelerator count, nvidia one with a GPU count, neuron one with an
// accelerator count.
func (v Variant) Requirements(f *Family) []corev1.NodeSelectorRequirement {
	switch v {
	case VariantStandard:
		return []corev1.NodeSelectorRequirement{
			{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}
	case VariantNvidia:
		return []corev1.NodeSelectorRequirement{{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantWindows:
		return []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{OSWindows}},
			{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{f.WindowsBuild}},
		}
	}
	return nil
}
