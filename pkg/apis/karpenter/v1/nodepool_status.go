package v1

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NodePool condition types.
const (
	// ConditionTypeValidationSucceeded is False when the NodePool fails checks
	// the schema cannot express (e.g. a budget schedule that does not parse).
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeClassReady mirrors the Ready condition of the referenced NodeClass.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeNodeRegistrationHealthy is False after recent launches of
	// the NodePool failed to register as nodes.
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
)

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// Resources is the sum of the capacity of the NodePool's nodes, plus the
	// number of nodes under the "nodes" key.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes of the NodePool (its NodeClaims that have
	// not been deleted). It is the scale subresource's status replicas.
	// +kubebuilder:default:=0
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the NodePool's NodeClass
	// when its readiness was last copied into NodeClassReady.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions are the conditions of the NodePool; Ready is True when the
	// NodePool is valid and its NodeClass is ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}

var nodePoolConditions = status.NewReadyConditions(ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady)

// StatusConditions returns the accessor of the NodePool's conditions.
func (in *NodePool) StatusConditions() status.ConditionSet { return nodePoolConditions.For(in) }

// GetConditions returns the NodePool's conditions.
func (in *NodePool) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions replaces the NodePool's conditions.
func (in *NodePool) SetConditions(c []status.Condition) { in.Status.Conditions = c }

var _ status.Object = &NodePool{}
