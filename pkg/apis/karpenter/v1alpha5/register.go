package v1alpha5

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// SchemeGroupVersion is karpenter.sh/v1alpha5.
	SchemeGroupVersion = schema.GroupVersion{Group: "karpenter.sh", Version: "v1alpha5"}
	// SchemeBuilder registers the v1alpha5 kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the v1alpha5 kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&Provisioner{}, &ProvisionerList{}, &Machine{}, &MachineList{})
}

// Labels and annotations of the v1alpha5 API.
const (
	// ProvisionerNameLabelKey named the Provisioner owning a node.
	ProvisionerNameLabelKey = "karpenter.sh/provisioner-name"
	// DoNotEvictPodAnnotationKey blocked eviction of a pod (replaced by karpenter.sh/do-not-disrupt).
	DoNotEvictPodAnnotationKey = "karpenter.sh/do-not-evict"
	// DoNotConsolidateNodeAnnotationKey blocked consolidation of a node (replaced by karpenter.sh/do-not-disrupt).
	DoNotConsolidateNodeAnnotationKey = "karpenter.sh/do-not-consolidate"
)
