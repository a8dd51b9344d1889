// Package apis registers every Karpenter API group and version in one place.
//
// Groups and versions:
//   - karpenter.sh/v1 (NodePool, NodeClaim; storage), karpenter.sh/v1beta1
//     (served through the conversion webhook), karpenter.sh/v1alpha5
//     (Provisioner, Machine; legacy, read by the convert tool).
//   - karpenter.k8s.aws/v1 (EC2NodeClass; storage), v1beta1 (served),
//     v1alpha1 (AWSNodeTemplate; legacy).
//   - karpenter.sh/v1alpha1 (NodeOverlay; stored, not yet applied).
//   - autoscaling.x-k8s.io/v1beta1 (CapacityBuffer; acted on with the CapacityBuffer gate).
//   - karpenter.kwok.sh/v1alpha1 (KWOKNodeClass, the simulated provider).
//
// The CRDs generated from these types are embedded by package crds.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
)

var builder = runtime.NewSchemeBuilder(
	v1.AddToScheme,
	v1beta1.AddToScheme,
	v1alpha5.AddToScheme,
	v1alpha1.AddToScheme,
	autoscalingv1beta1.AddToScheme,
	kwokv1alpha1.AddToScheme,
	awsv1.AddToScheme,
	awsv1beta1.AddToScheme,
	awsv1alpha1.AddToScheme,
)

// AddToScheme registers every group/version of the project.
func AddToScheme(s *runtime.Scheme) error { return builder.AddToScheme(s) }
