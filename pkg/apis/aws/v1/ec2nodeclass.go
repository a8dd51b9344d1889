package v1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClassSpec is the AWS-specific configuration of the nodes launched for
// every NodePool that references this EC2NodeClass.
//
// The object-level rules below cover relations between fields; rules about one
// field sit on that field so the API server reports the field's own path.
//
// +kubebuilder:validation:XValidation:message="must specify exactly one of ['role', 'instanceProfile']",rule="(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'AL2' or 'Custom' when amiSelectorTerms holds an al2 alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'al2') ? (self.amiFamily == 'Custom' || self.amiFamily == 'AL2') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'AL2023' or 'Custom' when amiSelectorTerms holds an al2023 alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'al2023') ? (self.amiFamily == 'Custom' || self.amiFamily == 'AL2023') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'Bottlerocket' or 'Custom' when amiSelectorTerms holds a bottlerocket alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'bottlerocket') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Bottlerocket') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'Windows2019' or 'Custom' when amiSelectorTerms holds a windows2019 alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2019') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2019') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'Windows2022' or 'Custom' when amiSelectorTerms holds a windows2022 alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2022') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2022') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be 'Windows2025' or 'Custom' when amiSelectorTerms holds a windows2025 alias",rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2025') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2025') : true)"
// +kubebuilder:validation:XValidation:message="amiFamily must be specified when amiSelectorTerms does not contain an alias",rule="self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets nodes are launched into. Terms are
	// ORed; the fields inside one term are ANDed. Karpenter launches into the
	// matching subnet with the most free IP addresses in each zone.
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms: each term must set at least one of ['tags', 'id']",rule="self.all(x, has(x.tags) || has(x.id))"
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags' (rejected when every term combines them)",rule="!self.all(x, has(x.id) && has(x.tags))"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms" hash:"ignore"`
	// SecurityGroupSelectorTerms select the security groups attached to nodes.
	// Terms are ORed; the fields inside one term are ANDed.
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms cannot be empty",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: each term must set at least one of ['tags', 'id', 'name']",rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags' or 'name' (rejected when every term combines them)",rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))"
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms: 'name' is mutually exclusive, it cannot be combined with 'tags' or 'id' (rejected when every term combines them)",rule="!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms" hash:"ignore"`
	// PlacementGroupSelector selects the EC2 placement group nodes are
	// launched into, by name or by id (one of the two).
	// +kubebuilder:validation:XValidation:message="placementGroupSelector: must set one of ['name', 'id']",rule="has(self.name) || has(self.id)"
	// +kubebuilder:validation:XValidation:message="placementGroupSelector: 'name' and 'id' are mutually exclusive",rule="!(has(self.name) && has(self.id))"
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	// AssociatePublicIPAddress controls whether nodes get a public IPv4
	// address. When unset, the subnet's own setting applies.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// IPPrefixCount is the number of IPv4 /28 prefixes assigned to the
	// primary network interface of each node.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty" hash:"ignore"`
	// AMISelectorTerms select the AMIs nodes boot from. A term is either an
	// alias (family@version, e.g. al2023@latest, which must then be the only
	// term), an id, or a combination of name, owner and tags. Terms are ORed;
	// for each architecture and accelerator the newest matching AMI is used.
	// A term may also be an ssmParameter alone, naming a parameter that
	// holds an AMI id.
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: each term must set at least one of ['tags', 'id', 'name', 'alias', 'ssmParameter']",rule="self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))"
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'alias', 'tags', 'name' or 'owner' in the same term",rule="!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))"
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: 'alias' is mutually exclusive, it cannot be combined with 'id', 'tags', 'name' or 'owner' in the same term",rule="!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))"
	// +kubebuilder:validation:XValidation:message="amiSelectorTerms: a term with 'alias' must be the only term",rule="!(self.exists(x, has(x.alias)) && self.size() != 1)"
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms" hash:"ignore"`
	// AMIFamily decides how Karpenter bootstraps the node (the userData it
	// generates) and which default block devices it uses. It is optional when
	// amiSelectorTerms holds an alias (the alias's family is used) and
	// required otherwise. Custom means the AMI is bootstrapped entirely by
	// the supplied userData.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Custom,Windows2019,Windows2022,Windows2025}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty" hash:"ignore"`
	// UserData is merged with the bootstrap configuration Karpenter generates
	// for the AMI family (MIME multi-part for AL2, NodeConfig for AL2023, TOML
	// for Bottlerocket, PowerShell for Windows) or used as-is for Custom.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the IAM role nodes assume. Karpenter creates and manages an
	// instance profile for it. Exactly one of role and instanceProfile is set.
	// +kubebuilder:validation:XValidation:message="role cannot be empty",rule="self != ''"
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing IAM instance profile that nodes use.
	// Karpenter does not manage it. Exactly one of role and instanceProfile is set.
	// +kubebuilder:validation:XValidation:message="instanceProfile cannot be empty",rule="self != ''"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are applied to every EC2 resource Karpenter creates for this class
	// (instances, volumes, launch templates, instance profiles). Keys that
	// Karpenter itself uses to track ownership are rejected.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys aren't supported",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'eks:eks-cluster-name' is set by Karpenter and cannot be used",rule="self.all(k, k !='eks:eks-cluster-name')"
	// +kubebuilder:validation:XValidation:message="tags: restricted tag keys matching 'kubernetes.io/cluster/*' are set by Karpenter and cannot be used",rule="self.all(k, !k.startsWith('kubernetes.io/cluster') )"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.sh/nodepool' is set by Karpenter and cannot be used",rule="self.all(k, k != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.sh/nodeclaim' is set by Karpenter and cannot be used",rule="self.all(k, k !='karpenter.sh/nodeclaim')"
	// +kubebuilder:validation:XValidation:message="tags: the restricted tag key 'karpenter.k8s.aws/ec2nodeclass' is set by Karpenter and cannot be used",rule="self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet configures the kubelet of every node launched from this class.
	// It replaces NodePool.spec.template.spec.kubelet of the v1beta1 API.
	// Any field of the kubelet's KubeletConfiguration may be set. Karpenter
	// reads the ones that decide a node's capacity (maxPods, podsPerCore,
	// kubeReserved, systemReserved, evictionHard, ...) and hands the rest
	// to the node's bootstrap where the AMI family can carry them. The API
	// server does not check this object: Karpenter does, and reports a
	// wrong field as ValidationSucceeded=False naming it, which keeps the
	// class from launching nodes. With the NodeClassCEL feature gate,
	// maxPods may be a CEL expression (a string) and a kubeReserved or
	// systemReserved value anything that is not a quantity, evaluated per
	// instance type over vcpus, memory_mib, default_enis, ips_per_eni,
	// max_pods and instance_type.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty" hash:"ignore"`
	// BlockDeviceMappings are the EBS volumes attached to nodes. When empty,
	// the AMI family's default root volume is used. At most one mapping may
	// be marked rootVolume.
	// +kubebuilder:validation:XValidation:message="blockDeviceMappings: must have at most one entry with rootVolume set to true",rule="self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1"
	// +kubebuilder:validation:MaxItems=50
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy says how local NVMe instance store volumes are used.
	// RAID0 stripes them into one array that backs the node's ephemeral
	// storage (kubelet and container images). When unset they are left alone.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// NetworkInterfaces are the network interfaces attached to nodes at
	// launch, by network card and device index. When set, one of them must
	// be the primary interface (card 0, device 0, type interface).
	// +kubebuilder:validation:XValidation:message="networkInterfaces: must include the primary interface (networkCardIndex 0, deviceIndex 0, interfaceType 'interface')",rule="self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')"
	// +kubebuilder:validation:XValidation:message="networkInterfaces: each (networkCardIndex, deviceIndex) pair may appear once, and each network card may have at most one efa-only interface",rule="self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))"
	// +kubebuilder:validation:MaxItems:=150
	// +optional
	NetworkInterfaces []*NetworkInterface `json:"networkInterfaces,omitempty"`
	// DetailedMonitoring enables 1-minute CloudWatch metrics for nodes.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions configure the instance metadata service (IMDS) of nodes.
	// The default requires IMDSv2 tokens and allows one network hop, so that
	// pods (one hop further away) cannot read the node's credentials.
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// EnclaveOptions turns AWS Nitro Enclaves on for nodes. When omitted, or
	// enabled is false, enclaves are off.
	// +optional
	EnclaveOptions *EnclaveOptions `json:"enclaveOptions,omitempty"`
	// ConnectionTracking sets the idle connection tracking timeouts of the
	// network interfaces in the launch template (not of EFA-only interfaces,
	// nor of the ones the CNI attaches later). It needs Nitro instances.
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// Context is the EC2 Fleet context, reserved for specific AWS accounts.
	// +optional
	Context *string `json:"context,omitempty"`
	// CPUOptions configure the processor of nodes.
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
	// CapacityReservationSelectorTerms select EC2 capacity reservations
	// nodes may be launched into. Terms are ORed; the fields inside one term
	// are ANDed. When empty, no reservation is used.
	// +kubebuilder:validation:XValidation:message="capacityReservationSelectorTerms: each term must set at least one of ['tags', 'id', 'instanceMatchCriteria']",rule="self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))"
	// +kubebuilder:validation:XValidation:message="capacityReservationSelectorTerms: 'id' is mutually exclusive, it cannot be combined with 'tags', 'ownerID' or 'instanceMatchCriteria' (rejected when every term combines them)",rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))"
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty" hash:"ignore"`
}

// SubnetSelectorTerm selects subnets by tags or by id. Its fields are ANDed.
type SubnetSelectorTerm struct {
	// Tags selects subnets carrying every listed tag. The value "*" matches
	// any value of the key.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one subnet by its id (subnet-...).
	// +kubebuilder:validation:Pattern="subnet-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name. Its
// fields are ANDed.
type SecurityGroupSelectorTerm struct {
	// Tags selects security groups carrying every listed tag. The value "*"
	// matches any value of the key.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one security group by its id (sg-...).
	// +kubebuilder:validation:Pattern="sg-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects security groups by their EC2 group name (not the Name tag).
	// +optional
	Name string `json:"name,omitempty"`
}

// AMISelectorTerm selects AMIs. Set alias alone, id alone, ssmParameter
// alone, or any of name, owner and tags (ANDed).
type AMISelectorTerm struct {
	// Alias selects the EKS-optimized AMI of a family, written family@version:
	// al2, al2023 or bottlerocket with a version such as v20240625 or latest,
	// windows2019, windows2022 and windows2025 only with latest. "latest" follows every new
	// release, which replaces (drifts) nodes whenever AWS publishes an AMI.
	// +kubebuilder:validation:XValidation:message="alias: must be in the format 'family@version'",rule="self.matches('^[a-zA-Z0-9]+@.+$')"
	// +kubebuilder:validation:XValidation:message="alias: family is not supported, must be one of 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']"
	// +kubebuilder:validation:XValidation:message="alias: windows families may only use the version 'latest'",rule="self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true"
	// +kubebuilder:validation:MaxLength=30
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags selects AMIs carrying every listed tag. The value "*" matches any
	// value of the key.
	// +kubebuilder:validation:XValidation:message="tags: empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects one AMI by its id (ami-...).
	// +kubebuilder:validation:Pattern="ami-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects AMIs by name; wildcards (*) are allowed. Without an owner,
	// only AMIs owned by the account itself or by Amazon are considered.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner is the account id or alias (e.g. amazon, self) that owns the AMI.
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter is the name or ARN of an SSM parameter whose value is an
	// AMI id, e.g. a public EKS parameter such as
	// /aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id
	// or a parameter of your own that your AMI pipeline updates.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// MetadataOptions configure the instance metadata service (IMDS) of a node.
// See the EC2 documentation of InstanceMetadataOptionsRequest.
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata endpoint on (enabled) or off (disabled).
	// Turning it off also stops Karpenter-generated bootstrap from working.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the IPv6 metadata endpoint on or off.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops a metadata PUT response
	// may travel. 1 keeps it on the node; 2 lets containers that are not on
	// the host network reach IMDS.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is required to accept only IMDSv2 (session token) requests,
	// or optional to also accept IMDSv1.
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
	// +kubebuilder:validation:XValidation:message="ebs: snapshotID or volumeSize must be defined",rule="has(self.snapshotID) || has(self.volumeSize)"
	// +kubebuilder:validation:XValidation:message="ebs: volumeInitializationRate needs a non-empty snapshotID",rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')"
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the volume that holds the root filesystem; its size
	// is the node's ephemeral-storage capacity. At most one mapping sets it.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume, with kmsKeyID or the account's default key.
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
	// VolumeInitializationRate is the EBS Provisioned Rate for Volume
	// Initialization in MiB/s (100 to 300): how fast the blocks of
	// snapshotID are fetched into the new volume. It needs snapshotID.
	// +kubebuilder:validation:Minimum:=100
	// +kubebuilder:validation:Maximum:=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// VolumeSize is the size of the volume, between 1Gi and 64Ti, written
	// with a G, Gi, T or Ti suffix (e.g. 100Gi). When unset it is the size of
	// the snapshot.
	// +kubebuilder:validation:Pattern:="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty" hash:"string"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`

	// InvalidVolumeSize holds a stored volumeSize that is not a size (the
	// schema's pattern, upstream's, lets "T" and "Ti" through without a
	// number, which would otherwise decode as zero); it is written back as
	// is and the controller reports it.
	InvalidVolumeSize string `json:"-"`
}

// PlacementGroupSelector names one EC2 placement group.
type PlacementGroupSelector struct {
	// Name of the placement group.
	// +kubebuilder:validation:MinLength:=1
	// +optional
	Name *string `json:"name,omitempty"`
	// ID of the placement group (pg-...).
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +optional
	ID *string `json:"id,omitempty"`
}

// EnclaveOptions configure AWS Nitro Enclaves.
type EnclaveOptions struct {
	// Enabled turns Nitro Enclaves on.
	// +required
	Enabled bool `json:"enabled"`
}

// CPUOptions configure the processor of a node.
type CPUOptions struct {
	// NestedVirtualization turns nested virtualization on or off. When
	// enabled, only instance types that support it are used.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// ConnectionTracking holds idle connection tracking timeouts, in seconds.
// Unset timeouts keep EC2's defaults.
// +kubebuilder:validation:XValidation:message="connectionTracking: set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout",rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)"
type ConnectionTracking struct {
	// TCPEstablishedTimeout for idle established TCP connections, 60 to 432000.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout for idle UDP flows that saw more than one
	// request-response exchange, 60 to 180.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout for idle UDP flows seen in one direction or for a single
	// request-response exchange, 30 to 60.
	// +kubebuilder:validation:Minimum:=30
	// +kubebuilder:validation:Maximum:=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// InterfaceType is the type of a network interface.
type InterfaceType string

// Network interface types.
const (
	// InterfaceTypeInterface is a standard (ENA) interface.
	InterfaceTypeInterface InterfaceType = "interface"
	// InterfaceTypeEFAOnly is an Elastic Fabric Adapter without IP traffic.
	InterfaceTypeEFAOnly InterfaceType = "efa-only"
)

// NetworkInterface is one network interface attached at launch.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum:=0
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's device index on that card.
	// +kubebuilder:validation:Minimum:=0
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface or efa-only.
	// +kubebuilder:validation:Enum:={interface,efa-only}
	InterfaceType InterfaceType `json:"interfaceType"`
}

// InstanceStorePolicy says how local instance store volumes are used.
// +kubebuilder:validation:Enum:={RAID0}
type InstanceStorePolicy string

const (
	// InstanceStorePolicyRAID0 stripes every NVMe instance store volume into
	// one RAID-0 array used for the node's ephemeral storage.
	InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"
)

// AMI families. The values are the ones amiFamily accepts; the alias form is
// the lower-case name (al2023@latest).
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// AliasFamilies are the AMI families that can be selected by alias.
var AliasFamilies = []string{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025}

// AliasVersionLatest is the alias version that follows every new AMI release.
const AliasVersionLatest = "latest"

// EC2NodeClass is the Schema for the EC2NodeClass API: how to launch and
// bootstrap the EC2 instances of the NodePools that reference it.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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

// Alias is a parsed amiSelectorTerms[].alias.
type Alias struct {
	// Family is the lower-case family as written in the alias, e.g. al2023.
	Family string
	// Version is the part after '@', e.g. latest or v20240625.
	Version string
}

// String renders the alias back into family@version form.
func (a Alias) String() string { return a.Family + "@" + a.Version }

// ParseAlias splits family@version. It reports false when s has no '@'.
func ParseAlias(s string) (Alias, bool) {
	family, version, ok := strings.Cut(s, "@")
	if !ok || family == "" || version == "" {
		return Alias{}, false
	}
	return Alias{Family: family, Version: version}, true
}

// AMIFamilyForAlias maps an alias family (al2023) to the amiFamily value
// (AL2023). It returns "" for unknown families.
func AMIFamilyForAlias(family string) string {
	for _, f := range AliasFamilies {
		if strings.EqualFold(f, family) {
			return f
		}
	}
	return ""
}

// Alias returns the alias term of the class, or nil when the AMIs are chosen
// by id, name or tags.
func (in *EC2NodeClass) Alias() *Alias {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		if a, ok := ParseAlias(term.Alias); ok {
			return &a
		}
	}
	return nil
}

// AMIFamily is the family that decides bootstrapping: the explicit amiFamily
// when set, else the alias's family, else Custom.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	if a := in.Alias(); a != nil {
		if f := AMIFamilyForAlias(a.Family); f != "" {
			return f
		}
	}
	return AMIFamilyCustom
}
