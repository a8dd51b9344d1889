package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AWSNodeTemplateSpec is the AWS configuration a v1alpha5 Provisioner points
// to with providerRef.
type AWSNodeTemplateSpec struct {
	// UserData is merged with the bootstrap configuration Karpenter generates
	// for the AMI family, or used as-is for Custom.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// AWS holds the fields shared with the inline Provisioner provider block.
	AWS `json:",inline"`
	// AMISelector selects AMIs. Keys are tags, except the reserved keys
	// aws::ids (or aws-ids; comma separated AMI ids), aws::name and
	// aws::owners. Comma separated values are alternatives.
	// +optional
	AMISelector map[string]string `json:"amiSelector,omitempty"`
	// DetailedMonitoring enables 1-minute CloudWatch metrics for nodes.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
}

// AWS is the provider configuration of the alpha APIs. It is both the inline
// part of AWSNodeTemplateSpec and the schema of a v1alpha5 Provisioner's
// spec.provider block (see DeserializeProvider).
type AWS struct {
	// AMIFamily decides how nodes are bootstrapped; AL2 when unset.
	// +kubebuilder:validation:Enum:={AL2,Bottlerocket,Ubuntu,Windows2019,Windows2022,Custom}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Context is the EC2 Fleet context, reserved for specific AWS accounts.
	// +optional
	Context *string `json:"context,omitempty"`
	// InstanceProfile is the IAM instance profile nodes use.
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// SubnetSelector selects subnets. Keys are tags, except aws::ids (or
	// aws-ids) which lists subnet ids. Comma separated values are alternatives.
	// +optional
	SubnetSelector map[string]string `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector selects security groups, like subnetSelector.
	// +optional
	SecurityGroupSelector map[string]string `json:"securityGroupSelector,omitempty"`
	// Tags are applied to every EC2 resource Karpenter creates.
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// LaunchTemplate names an unmanaged launch template (deprecated, and not
	// convertible to v1beta1).
	LaunchTemplate `json:",inline"`
	// MetadataOptions configure the instance metadata service of nodes.
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// BlockDeviceMappings are the EBS volumes attached to nodes.
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
}

// LaunchTemplate references an existing launch template by name.
type LaunchTemplate struct {
	// LaunchTemplateName is the name of an existing launch template to use
	// instead of one that Karpenter generates.
	// +optional
	LaunchTemplateName *string `json:"launchTemplate,omitempty"`
}

// MetadataOptions configure the instance metadata service (IMDS) of a node.
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata endpoint on (enabled) or off (disabled).
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the IPv6 metadata endpoint on or off.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops a metadata PUT
	// response may travel.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is required to accept only IMDSv2 requests, or optional to
	// also accept IMDSv1.
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
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS is the provisioned I/O operations per second.
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
	// VolumeSize is the size of the volume (1Gi to 64Ti).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// Subnet is a subnet that subnetSelector resolved to.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the availability zone of the subnet.
	// +required
	Zone string `json:"zone"`
}

// SecurityGroup is a security group that securityGroupSelector resolved to.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is an AMI that amiSelector resolved to.
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
}

// AWSNodeTemplateStatus is what the selectors resolved to.
type AWSNodeTemplateStatus struct {
	// Subnets that nodes may be launched into.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups attached to nodes.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs nodes may boot from.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
}

// AWSNodeTemplate is the legacy (v1alpha1) Schema for AWS node configuration,
// replaced by EC2NodeClass.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=awsnodetemplates,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
type AWSNodeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired node configuration.
	// +optional
	Spec AWSNodeTemplateSpec `json:"spec,omitempty"`
	// Status is what the selectors resolved to.
	// +optional
	Status AWSNodeTemplateStatus `json:"status,omitempty"`
}

// AWSNodeTemplateList is a list of AWSNodeTemplates.
// +kubebuilder:object:root=true
type AWSNodeTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AWSNodeTemplate `json:"items"`
}
