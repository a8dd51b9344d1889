package instancetype

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Kubernetes architecture names of the EC2 architectures Karpenter launches.
const (
	archAMD64 = "amd64"
	archARM64 = "arm64"
)

// architecture is the Kubernetes name of the type's first supported
// architecture Kubernetes knows (i386 is skipped), or "" when none.
func architecture(info *ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo == nil {
		return ""
	}
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			return archAMD64
		case ec2types.ArchitectureTypeArm64:
			return archARM64
		}
	}
	return ""
}

// familyScheme splits an instance type name into category, an optional
// memory-size infix of high-memory types (u-6tb1) and generation: m5.large
// -> m, 5; u-6tb1.metal -> u, 1; c7gn.large -> c, 7.
var familyScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// zone is a subnet zone of the EC2NodeClass.
type zone struct {
	name, id string
	// subnets are the class's subnets in the zone: the zone's offerings
	// are out only when every one of them ran out of addresses.
	subnets []string
}

// requirements are the labels every node of the type carries, as
// requirements: single values for the facts of the type, the set of zones the
// type can be launched in for this class, and the capacity types EC2 sells it
// as. Labels a type does not have are DoesNotExist, so that a pod asking for
// a GPU label never lands on a type without GPUs.
func requirements(info *ec2types.InstanceTypeInfo, s *settings, region string, zones []zone) scheduling.Requirements {
	name := string(info.InstanceType)
	in := func(key string, values ...string) scheduling.Requirement {
		return scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, values...)
	}
	absent := func(key string) scheduling.Requirement {
		return scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist)
	}
	// one is a label set only when the type has the fact.
	one := func(key, value string, ok bool) scheduling.Requirement {
		if !ok {
			return absent(key)
		}
		return in(key, value)
	}

	arch := architecture(info)
	var oss []string
	switch {
	case !isWindows(s.family):
		oss = []string{string(corev1.Linux)}
	case arch == archAMD64:
		// Windows AMIs exist for x86_64 only: arm64 types get no OS at all,
		// so nothing can select them.
		oss = []string{string(corev1.Windows)}
	}
	zoneNames := make([]string, 0, len(zones))
	zoneIDs := make([]string, 0, len(zones))
	for _, z := range zones {
		zoneNames = append(zoneNames, z.name)
		if z.id != "" {
			zoneIDs = append(zoneIDs, z.id)
		}
	}
	var capacityTypes []string
	for _, uc := range info.SupportedUsageClasses {
		if uc == ec2types.UsageClassTypeOnDemand || uc == ec2types.UsageClassTypeSpot {
			capacityTypes = append(capacityTypes, string(uc))
		}
	}

	category, generation, familyName, size := nameParts(name)
	reqs := make([]scheduling.Requirement, 0, 40)
	reqs = append(reqs,
		in(corev1.LabelInstanceTypeStable, name),
		in(corev1.LabelArchStable, arch),
		in(corev1.LabelOSStable, oss...),
		in(corev1.LabelTopologyZone, zoneNames...),
		in(corev1.LabelTopologyRegion, region),
		one(corev1.LabelWindowsBuild, s.family.WindowsBuild, isWindows(s.family)),
		in(scheduling.LabelCapacityType, capacityTypes...),
		in(awsv1.LabelInstanceCPU, strconv.FormatInt(vcpus(info), 10)),
		in(awsv1.LabelInstanceMemory, strconv.FormatInt(memoryMiB(info), 10)),
		in(awsv1.LabelInstanceHypervisor, string(info.Hypervisor)),
		in(awsv1.LabelInstanceEncryptionInTransitSupported, strconv.FormatBool(info.NetworkInfo != nil && info.NetworkInfo.EncryptionInTransitSupported != nil && *info.NetworkInfo.EncryptionInTransitSupported)),
		in(awsv1.LabelInstanceTenancy, awsv1.InstanceTenancyDefault, awsv1.InstanceTenancyDedicated),
		one(awsv1.LabelInstanceCategory, category, category != ""),
		one(awsv1.LabelInstanceGeneration, generation, generation != ""),
		one(awsv1.LabelInstanceFamily, familyName, familyName != ""),
		one(awsv1.LabelInstanceSize, size, size != ""),
		in(awsv1.LabelInstanceCapabilityFlex, strconv.FormatBool(strings.Contains(familyName, "-flex"))),
		// No reservation unless the class holds one for the type (see
		// withReservations in reserved.go).
		absent(awsv1.LabelCapacityReservationID),
		absent(awsv1.LabelCapacityReservationType),
	)
	if len(zoneIDs) > 0 {
		reqs = append(reqs, in(awsv1.LabelTopologyZoneID, zoneIDs...))
	}

	// CPU.
	var manufacturer, clock string
	if pi := info.ProcessorInfo; pi != nil {
		manufacturer = kebab(deref(pi.Manufacturer))
		// Types EC2 reports no sustained clock speed for are labelled 0, as upstream does.
		var ghz float64
		if pi.SustainedClockSpeedInGhz != nil {
			ghz = *pi.SustainedClockSpeedInGhz
		}
		clock = strconv.Itoa(int(math.Round(ghz * 1000)))
	}
	reqs = append(reqs,
		one(awsv1.LabelInstanceCPUManufacturer, manufacturer, manufacturer != ""),
		one(awsv1.LabelInstanceCPUSustainedClockSpeedMhz, clock, clock != ""))

	// Storage and network.
	var nvme string
	if isi := info.InstanceStorageInfo; isi != nil && isi.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && isi.TotalSizeInGB != nil {
		nvme = strconv.FormatInt(*isi.TotalSizeInGB, 10)
	}
	var ebs string
	if ei := info.EbsInfo; ei != nil && ei.EbsOptimizedInfo != nil && ei.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && ei.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		ebs = strconv.Itoa(int(*ei.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	bandwidth, hasBandwidth := networkBandwidthMbps[name]
	reqs = append(reqs,
		one(awsv1.LabelInstanceLocalNVME, nvme, nvme != ""),
		one(awsv1.LabelInstanceEBSBandwidth, ebs, ebs != ""),
		one(awsv1.LabelInstanceNetworkBandwidth, strconv.FormatInt(bandwidth, 10), hasBandwidth))

	// GPUs: labelled only when the type has a single kind of GPU.
	var gpu *ec2types.GpuDeviceInfo
	if info.GpuInfo != nil && len(info.GpuInfo.Gpus) == 1 {
		gpu = &info.GpuInfo.Gpus[0]
	}
	if gpu != nil {
		var gpuMemory int32
		if gpu.MemoryInfo != nil && gpu.MemoryInfo.SizeInMiB != nil {
			gpuMemory = *gpu.MemoryInfo.SizeInMiB
		}
		reqs = append(reqs,
			in(awsv1.LabelInstanceGPUName, kebab(deref(gpu.Name))),
			in(awsv1.LabelInstanceGPUManufacturer, kebab(deref(gpu.Manufacturer))),
			in(awsv1.LabelInstanceGPUCount, strconv.Itoa(int(derefInt32(gpu.Count)))),
			in(awsv1.LabelInstanceGPUMemory, strconv.Itoa(int(gpuMemory))))
	} else {
		reqs = append(reqs, absent(awsv1.LabelInstanceGPUName), absent(awsv1.LabelInstanceGPUManufacturer),
			absent(awsv1.LabelInstanceGPUCount), absent(awsv1.LabelInstanceGPUMemory))
	}

	// Accelerators: Neuron devices (Inferentia, Trainium), or another single
	// kind of inference accelerator.
	accName, accManufacturer, accCount := "", "", int32(0)
	switch {
	case info.NeuronInfo != nil && len(info.NeuronInfo.NeuronDevices) == 1:
		d := info.NeuronInfo.NeuronDevices[0]
		accName, accManufacturer, accCount = kebab(deref(d.Name)), "aws", derefInt32(d.Count)
	case info.NeuronInfo == nil && info.InferenceAcceleratorInfo != nil && len(info.InferenceAcceleratorInfo.Accelerators) == 1:
		a := info.InferenceAcceleratorInfo.Accelerators[0]
		accName, accManufacturer, accCount = kebab(deref(a.Name)), kebab(deref(a.Manufacturer)), derefInt32(a.Count)
	}
	reqs = append(reqs,
		one(awsv1.LabelInstanceAcceleratorName, accName, accName != ""),
		one(awsv1.LabelInstanceAcceleratorManufacturer, accManufacturer, accName != ""),
		one(awsv1.LabelInstanceAcceleratorCount, strconv.Itoa(int(accCount)), accName != ""))

	return scheduling.NewRequirements(reqs...)
}

// nameParts derives category, generation, family and size from the type name.
func nameParts(name string) (category, generation, family, size string) {
	if m := familyScheme.FindStringSubmatch(name); m != nil {
		category, generation = m[1], m[3]
	}
	if f, s, ok := strings.Cut(name, "."); ok && !strings.Contains(s, ".") {
		family, size = f, s
	}
	return category, generation, family, size
}

// kebab lower-cases and joins words with dashes: "Radeon Pro V520" -> "radeon-pro-v520".
func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
