package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of CapacityBuffer.
const Group = "autoscaling.x-k8s.io"

var (
	// SchemeGroupVersion is autoscaling.x-k8s.io/v1beta1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1beta1"}
	// SchemeBuilder registers the v1beta1 kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the v1beta1 kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&CapacityBuffer{}, &CapacityBufferList{})
}
