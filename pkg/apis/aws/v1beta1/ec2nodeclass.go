package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// EC2NodeClassSpec is the AWS-specific configuration of the nodes launched for
// every NodePool that references this EC2NodeClass.
// +kubebuilder:validation:XValidation:message="amiSelectorTerms is required when amiFamily == 'Custom'",rule="self.amiFamily == 'Custom' ? (has(self.amiSelectorTerms) && self.amiSelectorTerms.size() != 0) : true"
// +kubebuilder:validation:XValidation:message="must specify exactly one of ['role', 'instanceProfile']",rule="(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))"
// +kubebuilder:validation:XValidation:message="changing from 'instanceProfile' to 'role' (or back) is not supported; delete and recreate the EC2NodeClass to switch",rule="(has(oldSelf.role) && has(self.role)) || (has(oldSelf.instanceProfile) && has(self.instanceProfile))"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets nodes are launched into. Terms are
	// ORed; the fields inside one term are ANDed.
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms: each term must set at least one of ['tags', 'id']",rule="self.all(x, has(x.tags) || has(x.id))"
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags' in the same term",rule="!self.exists(x, has(x.id) && has(x.tags))"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms" hash:"ignore"`
	// SecurityGroupSelectorTerms select the security groups attached to nodes.
	// Terms are ORed; the fields inside one term are ANDed.
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: each term must set at least one of ['tags', 'id', 'name']",rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags' or 'name' in the same term",rule="!self.exists(x, has(x.id) && (has(x.tags) || has(x.name)))"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: 'name' is mutually exclusive, it cannot be combined with 'tags' or 'id' in the same term",rule="!self.exists(x, has(x.name) && (has(x.tags) || has(x.id)))"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms" hash:"ignore"`
	// AssociatePublicIPAddress controls whether nodes get a public IPv4
	// address. When unset, the subnet's own setting applies.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// AMISelectorTerms select the AMIs nodes boot from by id, or by any of
	// name, owner and tags. When empty, the latest EKS-optimized AMI of
	// amiFamily is used.
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: each term must set at least one of ['tags', 'id', 'name']",rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))"
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags', 'name' or 'owner' in the same term",rule="!self.exists(x, has(x.id) && (has(x.tags) || has(x.name) || has(x.owner)))"
	// +kubebuilder:validation:MaxItems=30
	// +optional
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms,omitempty" hash:"ignore"`
	// AMIFamily decides how Karpenter bootstraps the node and which AMIs it
	// selects when amiSelectorTerms is empty.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Ubuntu,Custom,Windows2019,Windows2022}
	// +required
	AMIFamily *string `json:"amiFamily"`
	// UserData is merged with the bootstrap configuration Karpenter generates
	// for the AMI family, or used as-is for Custom.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the IAM role nodes assume. Karpenter creates and manages an
	// instance profile for it. Exactly one of role and instanceProfile is set.
	// +kubebuilder:validation:XValidation:message="role cannot be empty",rule="self != ''"
	// +kubebuilder:validation:XValidation:message="role is immutable; delete and recreate the EC2NodeClass to change it",rule="self == oldSelf"
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing IAM instance profile that nodes use.
	// Exactly one of role and instanceProfile is set.
	// +kubebuilder:validation:XValidation:message="instanceProfile cannot be empty",rule="self != ''"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are applied to every EC2 resource Karpenter creates for this class.
	// Keys that Karpenter itself uses to track ownership are rejected.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys aren't supported",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tags: restricted tag keys matching 'kubernetes.io/cluster/*' are set by Karpenter and cannot be used",rule="self.all(k, !k.startsWith('kubernetes.io/cluster'))"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.sh/nodepool' is set by Karpenter and cannot be used",rule="self.all(k, k != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.sh/managed-by' is set by Karpenter and cannot be used",rule="self.all(k, k != 'karpenter.sh/managed-by')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.sh/nodeclaim' is set by Karpenter and cannot be used",rule="self.all(k, k != 'karpenter.sh/nodeclaim')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.k8s.aws/ec2nodeclass' is set by Karpenter and cannot be used",rule="self.all(k, k != 'karpenter.k8s.aws/ec2nodeclass')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// BlockDeviceMappings are the EBS volumes attached to nodes. When empty,
	// the AMI family's default root volume is used.
	// +kubebuilder:validation:XValidation:message="blockDeviceMappings: must have at most one entry with rootVolume set to true",rule="self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1"
	// +kubebuilder:validation:MaxItems=50
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy says how local NVMe instance store volumes are used.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// DetailedMonitoring enables 1-minute CloudWatch metrics for nodes.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions configure the instance metadata service (IMDS) of nodes.
	// The v1beta1 default allows two network hops, so pods can reach IMDS.
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":2,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// Context is the EC2 Fleet context, reserved for specific AWS accounts.
	// +optional
	Context *string `json:"context,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by id. Its fields are ANDed.
type SubnetSelectorTerm struct {
	// Tags selects subnets carrying every listed tag; "*" matches any value.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one subnet by its id (subnet-...).
	// +kubebuilder:validation:Pattern="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
type SecurityGroupSelectorTerm struct {
	// Tags selects security groups carrying every listed tag; "*" matches any value.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one security group by its id (sg-...).
	// +kubebuilder:validation:Pattern="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects security groups by their EC2 group name (not the Name tag).
	// +optional
	Name string `json:"name,omitempty"`
}

// AMISelectorTerm selects AMIs by id alone, or by any of name, owner and tags.
type AMISelectorTerm struct {
	// Tags selects AMIs carrying every listed tag; "*" matches any value.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one AMI by its id (ami-...).
	// +kubebuilder:validation:Pattern="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects AMIs by name; wildcards (*) are allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner is the account id or alias (amazon, self) that owns the AMI.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// MetadataOptions configure the instance metadata service (IMDS) of a node.
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata endpoint on (enabled) or off (disabled).
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the IPv6 metadata endpoint on or off.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops a metadata PUT
	// response may travel.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is required to accept only IMDSv2 requests, or optional to
	// also accept IMDSv1.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches one EBS volume to a node.
type BlockDeviceMapping struct {
	// DeviceName is the device the volume is exposed as, e.g. /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the volume that holds the root filesystem.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
// +kubebuilder:validation:XValidation:message="ebs: snapshotID or volumeSize must be defined",rule="has(self.snapshotID) || has(self.volumeSize)"
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS is the provisioned I/O operations per second, for io1, io2 and gp3.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the ARN of the KMS key that encrypts the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the EBS snapshot the volume is created from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput is the provisioned throughput in MiB/s, for gp3 only.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize is the size of the volume, between 1Gi and 64Ti, written
	// with a G, Gi, T or Ti suffix.
	// +kubebuilder:validation:Pattern:="^((([1-9][0-9]{0,3}|[1-4][0-9]{4}|5[0-8][0-9]{3}|59000)Gi)|(([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-3][0-9]{3}|64000)G)|(([1-9]|[1-4][0-9]|5[0-8])Ti)|(([1-9]|[1-5][0-9]|6[0-4])T))$"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty" hash:"string"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says how local instance store volumes are used.
// +kubebuilder:validation:Enum:={RAID0}
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 stripes every NVMe instance store volume into one array.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// AMI families of v1beta1. Ubuntu exists only here; converting to v1 maps it
// to AL2 (same bootstrap) and records the change in an annotation.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyUbuntu       = "Ubuntu"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyCustom       = "Custom"
)

// Subnet is a subnet that subnetSelectorTerms resolved to.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the availability zone of the subnet.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the availability zone id of the subnet.
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

// AMI is an AMI that amiSelectorTerms resolved to.
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
	// Deprecated is true when the AMI is past its EC2 deprecation time.
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
	// InstanceProfile is the name of the instance profile nodes use.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions report the readiness of each resolved resource.
	// +optional
	Conditions []status.Condition `json:"conditions,omitempty"`
}

// EC2NodeClass is the Schema for the EC2NodeClass API (v1beta1).
//
// The generated CRD does not serve this version: without the conversion
// webhook the API server would store v1beta1 objects unconverted under v1.
// The webhook, when enabled, switches it to served.
// +kubebuilder:object:root=true
// +kubebuilder:unservedversion
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1,description=""
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration of the nodes.
	// +optional
	Spec EC2NodeClassSpec `json:"spec,omitempty"`
	// Status is what Karpenter resolved the selectors to.
	// +optional
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// GetConditions implements status.Object.
func (in *EC2NodeClass) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions implements status.Object.
func (in *EC2NodeClass) SetConditions(c []status.Condition) { in.Status.Conditions = c }

// StatusConditions implements status.Object; v1beta1 objects carry the same
// conditions as v1 ones since both are views of one stored object.
func (in *EC2NodeClass) StatusConditions() status.ConditionSet {
	return status.NewReadyConditions("AMIsReady", "SubnetsReady", "SecurityGroupsReady", "InstanceProfileReady", "ValidationSucceeded").For(in)
}
