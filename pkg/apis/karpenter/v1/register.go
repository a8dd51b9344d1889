package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of NodePool and NodeClaim.
const Group = "karpenter.sh"

// CompatibilityGroup prefixes annotations that carry data between API versions.
const CompatibilityGroup = "compatibility." + Group

var (
	// SchemeGroupVersion is karpenter.sh/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers the v1 kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the v1 kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&NodePool{}, &NodePoolList{}, &NodeClaim{}, &NodeClaimList{})
}

// Kind returns the GroupKind of a karpenter.sh kind.
func Kind(kind string) schema.GroupKind { return SchemeGroupVersion.WithKind(kind).GroupKind() }

var _ runtime.Object = &NodePool{}
