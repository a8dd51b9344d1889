package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// CompatibilityGroup prefixes annotations that only exist to carry data
// across API versions (v1beta1 <-> v1); they are not meant to be set by users.
const CompatibilityGroup = "compatibility." + Group

// Well-known node labels of the AWS provider. Karpenter puts them on every
// node it launches (values derived from the EC2 instance type) and they may be
// used in NodePool requirements and pod node selectors / affinities.
const (
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelInstanceTenancy                      = Group + "/instance-tenancy"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible     = Group + "/capacity-reservation-interruptible"
	LabelPlacementGroupID                     = Group + "/placement-group-id"
	LabelPlacementGroupPartition              = Group + "/placement-group-partition"
	// LabelNodeClass names the EC2NodeClass a node was launched from.
	LabelNodeClass = Group + "/ec2nodeclass"

	// LabelTopologyZoneID is the availability zone id (e.g. usw2-az1), which,
	// unlike the zone name, is the same physical zone in every account.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
	// LabelWindowsBuild is the Windows build of a Windows node (upstream Kubernetes label).
	LabelWindowsBuild = "node.kubernetes.io/windows-build"
)

// Values of well-known labels.
const (
	InstanceTenancyDefault   = "default"
	InstanceTenancyDedicated = "dedicated"
)

// WellKnownLabels lists every label the provider sets on nodes and accepts in
// requirements. The karpenter.k8s.aws domain is restricted: NodePool and
// NodeClaim requirements and labels may use only these keys of it.
var WellKnownLabels = []string{
	LabelInstanceHypervisor,
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceLocalNVME,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceCapabilityFlex,
	LabelInstanceTenancy,
	LabelCapacityReservationID,
	LabelCapacityReservationType,
	LabelCapacityReservationInterruptible,
	LabelPlacementGroupID,
	LabelPlacementGroupPartition,
	LabelNodeClass,
	LabelTopologyZoneID,
	corev1.LabelWindowsBuild,
}

// RestrictedLabelDomains are label domains that only the provider may set.
var RestrictedLabelDomains = []string{Group}

// Annotations written by the provider.
const (
	// AnnotationEC2NodeClassHash is the hash of the EC2NodeClass spec that a
	// NodeClaim was launched with; a mismatch marks the NodeClaim drifted.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion versions the hash algorithm so that a
	// new Karpenter does not treat every node as drifted after an upgrade.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// EC2NodeClassHashVersion is the current hash version. It is
	// deliberately none of upstream's (v3 in v1.0, v4 in v1.1, v5 in v1.14,
	// v6 at HEAD): our hash is computed differently, so annotations written
	// by upstream Karpenter must read as "another version" (the class's
	// NodeClaims are re-stamped) rather than as drifted, which would replace
	// every node of a cluster switching over. Same scheme as the NodePool's.
	// kgo-v2 added spec.kubelet to the hash.
	EC2NodeClassHashVersion = "kgo-v2"
	// AnnotationInstanceTagged marks a NodeClaim whose instance got its
	// post-registration tags (Name, karpenter.sh/nodeclaim).
	AnnotationInstanceTagged = Group + "/tagged"
	// AnnotationInstanceProfile records the instance profile Karpenter created.
	AnnotationInstanceProfile = Group + "/instance-profile-name"

	// AnnotationKubeletCompatibilityHash is the hash of the kubelet
	// configuration a NodeClaim was launched with while the kubelet still
	// lived on the v1beta1 NodePool.
	AnnotationKubeletCompatibilityHash = CompatibilityGroup + "/kubelet-drift-hash"
	// AnnotationClusterNameTaggedCompatibility marks a NodeClaim whose
	// instance got the eks:eks-cluster-name tag after the v1 upgrade.
	AnnotationClusterNameTaggedCompatibility = CompatibilityGroup + "/cluster-name-tagged"
	// AnnotationUbuntuCompatibilityKey is set on a v1 EC2NodeClass converted
	// from a v1beta1 one with amiFamily Ubuntu, which v1 no longer has. The
	// value is a comma separated list of what the conversion changed:
	// amiFamily, blockDeviceMappings, incompatible.
	AnnotationUbuntuCompatibilityKey = CompatibilityGroup + "/v1beta1-ubuntu"
	// AnnotationUbuntuCompatibilityIncompatible: no amiSelectorTerms were
	// given, so the class cannot select an AMI in v1 and is not Ready.
	AnnotationUbuntuCompatibilityIncompatible = "incompatible"
	// AnnotationUbuntuCompatibilityAMIFamily: amiFamily Ubuntu became AL2.
	AnnotationUbuntuCompatibilityAMIFamily = "amiFamily"
	// AnnotationUbuntuCompatibilityBlockDeviceMappings: Ubuntu's default
	// root volume (/dev/sda1) was written out because AL2's default differs.
	AnnotationUbuntuCompatibilityBlockDeviceMappings = "blockDeviceMappings"
	// AnnotationAliasVersionCompatibilityKey carries the version of a v1
	// alias (family@version) on a v1beta1 object, which has no alias.
	AnnotationAliasVersionCompatibilityKey = CompatibilityGroup + "/v1-alias-version"
	// AnnotationAliasCompatibilityKey carries a whole v1 alias on a v1beta1
	// object when amiFamily was set beside the alias, so both survive a
	// round trip through v1beta1.
	AnnotationAliasCompatibilityKey = CompatibilityGroup + "/v1-alias"
	// AnnotationSSMParameterCompatibilityKey carries the v1 amiSelectorTerms
	// that select by ssmParameter (JSON list of {index, ssmParameter}) on a
	// v1beta1 object, whose terms have no such field.
	AnnotationSSMParameterCompatibilityKey = CompatibilityGroup + "/v1-ssm-parameters"
	// AnnotationKubeletCompatibilityKey carries the v1 spec.kubelet (JSON) on
	// a v1beta1 object, where EC2NodeClass has no kubelet field.
	AnnotationKubeletCompatibilityKey = CompatibilityGroup + "/v1-kubelet"
	// AnnotationSpecCompatibilityKey carries, as JSON, the v1 spec fields a
	// v1beta1 EC2NodeClass has no field for (capacityReservationSelectorTerms,
	// placementGroupSelector, ipPrefixCount, networkInterfaces,
	// enclaveOptions, connectionTracking, cpuOptions and the
	// volumeInitializationRate of each block device mapping).
	AnnotationSpecCompatibilityKey = CompatibilityGroup + "/v1-spec"
)

// Tags the provider puts on the EC2 resources it creates.
const (
	// TagNodeClaim names the NodeClaim of an instance.
	TagNodeClaim = "karpenter.sh/nodeclaim"
	// TagNodePool names the NodePool of an instance.
	TagNodePool = "karpenter.sh/nodepool"
	// TagEKSClusterName names the cluster of a resource.
	TagEKSClusterName = "eks:eks-cluster-name"
	// TagEC2NodeClass names the EC2NodeClass a resource was created for.
	TagEC2NodeClass = Group + "/ec2nodeclass"
	// TagName is the EC2 console name of an instance (the node name).
	TagName = "Name"
	// TagClusterPrefix is followed by the cluster name; the value is "owned".
	TagClusterPrefix = "kubernetes.io/cluster/"
	// TagManagedLaunchTemplatePrefix prefixes the names of the launch
	// templates Karpenter creates.
	TagManagedLaunchTemplatePrefix = Group + "/"
)

// RestrictedTagKeys are the tag keys spec.tags may not set because the
// provider uses them to track ownership; TagClusterPrefix is restricted as a
// prefix.
var RestrictedTagKeys = []string{TagEKSClusterName, TagNodePool, TagNodeClaim, TagEC2NodeClass}

// TerminationFinalizer keeps an EC2NodeClass until the instance profile and
// launch templates created for it are cleaned up.
const TerminationFinalizer = Group + "/termination"

// Extended resources the provider advertises for accelerators and ENIs.
const (
	ResourceNVIDIAGPU          corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU             corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron          corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore      corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi        corev1.ResourceName = "habana.ai/gaudi"
	ResourceAWSPodENI          corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
	ResourceEFA                corev1.ResourceName = "vpc.amazonaws.com/efa"
)
