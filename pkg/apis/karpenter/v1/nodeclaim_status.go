package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NodeClaim condition types.
const (
	// ConditionTypeLaunched is True once the cloud provider created the instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered is True once the instance joined as a Node.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized is True once the Node is Ready, its startup
	// taints are gone and its requested resources are allocatable.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeConsolidatable is True when consolidation may consider the node.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeDrifted is True when the node no longer matches its NodePool or NodeClass.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeDrained is True once the node's pods were evicted during termination.
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached is True once the node's volumes were detached during termination.
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating is True once the instance's deletion was requested.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	// ConditionTypeConsistentStateFound is False when the Node disagrees with the NodeClaim (e.g. less capacity).
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	// ConditionTypeDisruptionReason records why Karpenter is disrupting the node.
	ConditionTypeDisruptionReason = "DisruptionReason"
	// ConditionTypeRebooting is True while the node is being rebooted in
	// place (a repair policy's RebootNode action), its reason the phase
	// (RebootRequested, RebootIssued); False once the reboot ended, its reason
	// the outcome (RebootSucceeded, RebootFailed).
	ConditionTypeRebooting = "Rebooting"
)

// Reasons of the Rebooting condition. The disruption controller requests a
// reboot; the reboot controller carries it out.
const (
	RebootReasonRequested = "RebootRequested"
	RebootReasonIssued    = "RebootIssued"
	RebootReasonSucceeded = "RebootSucceeded"
	RebootReasonFailed    = "RebootFailed"
	// RebootReasonRebooting is the reason of the Initialized condition, made
	// Unknown once the reboot is issued: initialization holds for one boot.
	RebootReasonRebooting = "Rebooting"
)

// NodeClaimStatus is the observed state of a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the ID of the machine image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the total resources of the instance.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the resources available to pods once system overhead is reserved.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Conditions are keyed by type so that each controller server-side applies
	// only the conditions it owns (pkg/controllers/nodeclaim/ownedconditions).

	// Conditions are the lifecycle conditions of the NodeClaim; Ready is True
	// once it is Launched, Registered and Initialized.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was scheduled to or removed from
	// the node. Consolidation waits consolidateAfter from this time.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

var nodeClaimConditions = status.NewReadyConditions(ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized)

// StatusConditions returns the accessor of the NodeClaim's conditions.
func (in *NodeClaim) StatusConditions() status.ConditionSet { return nodeClaimConditions.For(in) }

// GetConditions returns the NodeClaim's conditions.
func (in *NodeClaim) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions replaces the NodeClaim's conditions.
func (in *NodeClaim) SetConditions(c []status.Condition) { in.Status.Conditions = c }

var _ status.Object = &NodeClaim{}
