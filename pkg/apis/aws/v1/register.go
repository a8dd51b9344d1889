package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of every AWS provider kind.
const Group = "karpenter.k8s.aws"

var (
	// SchemeGroupVersion is the group and version of this package's kinds.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers this package's kinds into a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds EC2NodeClass and EC2NodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &EC2NodeClass{}, &EC2NodeClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
