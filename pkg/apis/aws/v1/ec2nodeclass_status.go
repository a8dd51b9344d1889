package v1

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// Condition types of an EC2NodeClass. Ready is True only when every one of
// them is True; a NodeClass that is not Ready is not used for launches.
const (
	// ConditionTypeAMIsReady is True when amiSelectorTerms resolved to at least one AMI.
	ConditionTypeAMIsReady = "AMIsReady"
	// ConditionTypeSubnetsReady is True when subnetSelectorTerms resolved to at least one subnet.
	ConditionTypeSubnetsReady = "SubnetsReady"
	// ConditionTypeSecurityGroupsReady is True when securityGroupSelectorTerms resolved to at least one group.
	ConditionTypeSecurityGroupsReady = "SecurityGroupsReady"
	// ConditionTypeInstanceProfileReady is True when the instance profile exists (created for role, or the given one).
	ConditionTypeInstanceProfileReady = "InstanceProfileReady"
	// ConditionTypeValidationSucceeded is True when dry-run launch authorization checks pass.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypePlacementGroupReady is True when placementGroupSelector
	// resolved to an available placement group, or is not set.
	ConditionTypePlacementGroupReady = "PlacementGroupReady"
)

// Subnet is a subnet that subnetSelectorTerms resolved to.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the availability zone of the subnet, e.g. us-west-2a.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the availability zone id of the subnet, e.g. usw2-az1.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a security group that securityGroupSelectorTerms resolved to.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is an AMI that amiSelectorTerms resolved to, with the node
// requirements (architecture, accelerators) it is compatible with.
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must meet to boot this AMI.
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	// Deprecated is true when the AMI is past its EC2 deprecation time; it
	// is only used when no non-deprecated AMI matches the selector terms.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
}

// EC2NodeClassStatus is what Karpenter resolved the selectors of the spec to.
type EC2NodeClassStatus struct {
	// Subnets that nodes may be launched into.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups attached to nodes.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs nodes may boot from.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the name of the instance profile nodes use: the one
	// Karpenter created for spec.role, or spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// CapacityReservations that capacityReservationSelectorTerms resolved to.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// Conditions report the readiness of each resolved resource.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}

// StatusConditionTypes are the conditions that make up an EC2NodeClass's Ready.
var StatusConditionTypes = status.NewReadyConditions(
	ConditionTypeAMIsReady,
	ConditionTypeSubnetsReady,
	ConditionTypeSecurityGroupsReady,
	ConditionTypeInstanceProfileReady,
	ConditionTypeValidationSucceeded,
	ConditionTypePlacementGroupReady,
)

// GetConditions implements status.Object.
func (in *EC2NodeClass) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions implements status.Object.
func (in *EC2NodeClass) SetConditions(c []status.Condition) { in.Status.Conditions = c }

// StatusConditions implements status.Object.
// Classes that select capacity reservations also need
// CapacityReservationsReady for Ready.
func (in *EC2NodeClass) StatusConditions() status.ConditionSet {
	if len(in.Spec.CapacityReservationSelectorTerms) > 0 {
		return statusConditionTypesWithReservations.For(in)
	}
	return StatusConditionTypes.For(in)
}
