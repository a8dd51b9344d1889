package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// Group is the API group of the KWOK provider.
const Group = "karpenter.kwok.sh"

var (
	// SchemeGroupVersion is karpenter.kwok.sh/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}
	// SchemeBuilder registers KWOKNodeClass.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds KWOKNodeClass to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&KWOKNodeClass{}, &KWOKNodeClassList{})
}

// Well-known labels of the KWOK provider's instance types.
const (
	InstanceSizeLabelKey   = Group + "/instance-size"
	InstanceFamilyLabelKey = Group + "/instance-family"
	InstanceCPULabelKey    = Group + "/instance-cpu"
	InstanceMemoryLabelKey = Group + "/instance-memory"
)

// KWOKNodeClass configures the nodes the KWOK provider simulates.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec configures the simulated nodes.
	// +optional
	Spec KWOKNodeClassSpec `json:"spec,omitempty"`
	// Status is the observed state of the KWOKNodeClass.
	// +optional
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

// KWOKNodeClassSpec configures the simulated nodes.
type KWOKNodeClassSpec struct {
	// NodeRegistrationDelay is how long after launch the simulated node's Node
	// object appears, mimicking a real instance's boot time (e.g. "30s").
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	NodeRegistrationDelay metav1.Duration `json:"nodeRegistrationDelay,omitempty"`
}

// KWOKNodeClassStatus is the observed state of a KWOKNodeClass.
type KWOKNodeClassStatus struct {
	// Conditions are the conditions of the KWOKNodeClass; Ready is True when
	// the provider may launch nodes with it.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}

var conditions = status.NewReadyConditions()

// StatusConditions returns the accessor of the KWOKNodeClass's conditions.
// Ready has no dependents: the KWOK provider sets it directly.
func (in *KWOKNodeClass) StatusConditions() status.ConditionSet { return conditions.For(in) }

// GetConditions returns the conditions.
func (in *KWOKNodeClass) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions replaces the conditions.
func (in *KWOKNodeClass) SetConditions(c []status.Condition) { in.Status.Conditions = c }

var _ status.Object = &KWOKNodeClass{}
