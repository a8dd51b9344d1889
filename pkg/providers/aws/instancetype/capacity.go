package instancetype

import (
	"math"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// defaultMaxPods is the kubelet's own default, used by families whose pod
// density is not limited by ENIs (Windows).
const defaultMaxPods = 110

// graviton CMA: arm64 (Graviton) instances reserve 64 MiB of contiguous memory
// for the kernel that the node never reports as capacity.
const armReservedMiB = 64

func ceil(f float64) float64 { return math.Ceil(f) }

// capacity is the node's capacity as the kubelet will report it, before
// overhead. Zero quantities (no GPUs, no EFA, ...) are left out.
func capacity(info *ec2types.InstanceTypeInfo, s *settings, opts Options) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(vcpus(info), resource.DecimalSI),
		corev1.ResourceMemory:           memory(info, opts.VMMemoryOverheadPercent),
		corev1.ResourceEphemeralStorage: ephemeralStorage(info, s),
		corev1.ResourcePods:             *resource.NewQuantity(pods(info, s, opts.ReservedENIs), resource.DecimalSI),
	}
	name := string(info.InstanceType)
	add := func(n corev1.ResourceName, v int64) {
		if v > 0 {
			out[n] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	add(awsv1.ResourceAWSPodENI, podENIs(name))
	add(awsv1.ResourceNVIDIAGPU, gpus(info, "NVIDIA"))
	add(awsv1.ResourceAMDGPU, gpus(info, "AMD"))
	add(awsv1.ResourceHabanaGaudi, gpus(info, "Habana"))
	devices, cores := neuron(info)
	add(awsv1.ResourceAWSNeuron, devices)
	add(awsv1.ResourceAWSNeuronCore, cores)
	add(awsv1.ResourceEFA, efas(info, s.networkInterfaces))
	if isWindows(s.family) {
		// Windows pods get secondary IPs of the primary ENI from the VPC
		// resource controller, advertised as this resource.
		add(awsv1.ResourcePrivateIPv4Address, privateIPv4Addresses(info))
	}
	return out
}

func vcpus(info *ec2types.InstanceTypeInfo) int64 {
	if info.VCpuInfo == nil || info.VCpuInfo.DefaultVCpus == nil {
		return 0
	}
	return int64(*info.VCpuInfo.DefaultVCpus)
}

func memoryMiB(info *ec2types.InstanceTypeInfo) int64 {
	if info.MemoryInfo == nil || info.MemoryInfo.SizeInMiB == nil {
		return 0
	}
	return *info.MemoryInfo.SizeInMiB
}

// memory is the instance's memory less what the hypervisor and firmware keep:
// VM_MEMORY_OVERHEAD_PERCENT of it, rounded up to a MiB, and the Graviton CMA
// area on arm64.
func memory(info *ec2types.InstanceTypeInfo, overheadPercent float64) resource.Quantity {
	mib := memoryMiB(info)
	if architecture(info) == archARM64 {
		mib -= armReservedMiB
	}
	bytes := float64(mib * 1024 * 1024)
	overhead := int64(ceil(bytes * overheadPercent / 1024 / 1024))
	return *resource.NewQuantity((mib-overhead)*1024*1024, resource.BinarySI)
}

// eniLimitedPods is how many pods the VPC CNI can give an IP: every ENI of
// the default network card but the reserved ones, each with its primary IP
// kept for the node, plus 2 for host-network pods (the formula of the EKS
// AMIs' eni-max-pods.txt). Other network cards are not used by the CNI.
//
// EFA-only interfaces the class puts on network card 0 take an ENI slot
// without giving pods addresses, so they are taken off too.
func eniLimitedPods(info *ec2types.InstanceTypeInfo, reservedENIs int, interfaces []*awsv1.NetworkInterface) int64 {
	enis := int64(defaultCardInterfaces(info)) - int64(reservedENIs) - int64(efaOnly(interfaces, 0))
	if enis <= 0 {
		return 0
	}
	ips := int64(0)
	if info.NetworkInfo != nil && info.NetworkInfo.Ipv4AddressesPerInterface != nil {
		ips = int64(*info.NetworkInfo.Ipv4AddressesPerInterface)
	}
	return enis*(ips-1) + 2
}

// efaOnly counts the efa-only interfaces among interfaces, on network card
// card only when card is not negative.
func efaOnly(interfaces []*awsv1.NetworkInterface, card int32) int {
	n := 0
	for _, ni := range interfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly && (card < 0 || ni.NetworkCardIndex == card) {
			n++
		}
	}
	return n
}

// defaultCardInterfaces is the number of network interfaces of the default
// network card; types that do not list cards have one card.
func defaultCardInterfaces(info *ec2types.InstanceTypeInfo) int32 {
	ni := info.NetworkInfo
	if ni == nil {
		return 0
	}
	index := int32(0)
	if ni.DefaultNetworkCardIndex != nil {
		index = *ni.DefaultNetworkCardIndex
	}
	for _, card := range ni.NetworkCards {
		if card.NetworkCardIndex != nil && *card.NetworkCardIndex == index && card.MaximumNetworkInterfaces != nil {
			return *card.MaximumNetworkInterfaces
		}
	}
	if ni.MaximumNetworkInterfaces != nil {
		return *ni.MaximumNetworkInterfaces
	}
	return 0
}

// pods is the node's pod capacity: kubelet maxPods when set, else the ENI
// limit (or 110 where the family does not use it), capped by podsPerCore x
// vCPUs where the family honours podsPerCore.
func pods(info *ec2types.InstanceTypeInfo, s *settings, reservedENIs int) int64 {
	var n int64
	switch {
	case s.maxPods != nil:
		n = int64(*s.maxPods)
	case s.family.SupportsENILimitedPodDensity:
		n = eniLimitedPods(info, reservedENIs, s.networkInterfaces)
	default:
		n = defaultMaxPods
	}
	if s.podsPerCore != nil && *s.podsPerCore > 0 && s.family.PodsPerCoreEnabled {
		n = min(n, int64(*s.podsPerCore)*vcpus(info))
	}
	return n
}

// ephemeralStorage is the size of the volume that holds the kubelet's root
// directory and the container images, in this order of precedence:
//  1. instanceStorePolicy RAID0: all instance store volumes striped together;
//  2. the blockDeviceMappings entry marked rootVolume;
//  3. the entry for the family's data device (for Custom: the last entry);
//  4. the family's default volume for that device, or 20Gi.
func ephemeralStorage(info *ec2types.InstanceTypeInfo, s *settings) resource.Quantity {
	if s.instanceStorePolicy == awsv1.InstanceStorePolicyRAID0 && info.InstanceStorageInfo != nil && info.InstanceStorageInfo.TotalSizeInGB != nil {
		// Instance store sizes are decimal gigabytes.
		return *resource.NewScaledQuantity(*info.InstanceStorageInfo.TotalSizeInGB, resource.Giga)
	}
	if bdms := s.blockDeviceMappings; len(bdms) > 0 {
		for _, bdm := range bdms {
			if bdm.RootVolume {
				if size := volumeSize(bdm); size != nil {
					return *size
				}
				break
			}
		}
		if isCustom(s.family) {
			// A custom AMI's layout is unknown: by convention the last
			// mapping is the data volume.
			if size := volumeSize(bdms[len(bdms)-1]); size != nil {
				return *size
			}
			return defaultEBSSize
		}
		for _, bdm := range bdms {
			if bdm.DeviceName != nil && *bdm.DeviceName == s.family.EphemeralBlockDevice {
				if size := volumeSize(bdm); size != nil {
					return *size
				}
				break
			}
		}
	}
	if size, ok := defaultEphemeralSize(s.family); ok {
		return size
	}
	return defaultEBSSize
}

func volumeSize(bdm *awsv1.BlockDeviceMapping) *resource.Quantity {
	if bdm.EBS == nil || bdm.EBS.VolumeSize == nil {
		return nil
	}
	return bdm.EBS.VolumeSize
}

// podENIs is the number of branch ENIs (security groups for pods) of a type
// that supports ENI trunking.
func podENIs(name string) int64 {
	if l, ok := vpcLimits[name]; ok && l.trunking {
		return int64(l.branchInterfaces)
	}
	return 0
}

// privateIPv4Addresses is the secondary IPs of the primary ENI, which Windows
// pods use.
func privateIPv4Addresses(info *ec2types.InstanceTypeInfo) int64 {
	if l, ok := vpcLimits[string(info.InstanceType)]; ok {
		return int64(l.ipv4PerInterface) - 1
	}
	if info.NetworkInfo != nil && info.NetworkInfo.Ipv4AddressesPerInterface != nil {
		return int64(*info.NetworkInfo.Ipv4AddressesPerInterface) - 1
	}
	return 0
}

func gpus(info *ec2types.InstanceTypeInfo, manufacturer string) int64 {
	if info.GpuInfo == nil {
		return 0
	}
	var n int64
	for _, g := range info.GpuInfo.Gpus {
		if g.Manufacturer != nil && *g.Manufacturer == manufacturer && g.Count != nil {
			n += int64(*g.Count)
		}
	}
	return n
}

// neuron counts Neuron devices (Inferentia, Trainium) and their cores.
// Older API answers list Inferentia under InferenceAcceleratorInfo.
func neuron(info *ec2types.InstanceTypeInfo) (devices, cores int64) {
	if info.NeuronInfo != nil {
		for _, d := range info.NeuronInfo.NeuronDevices {
			if d.Count == nil {
				continue
			}
			devices += int64(*d.Count)
			if d.CoreInfo != nil && d.CoreInfo.Count != nil {
				cores += int64(*d.Count) * int64(*d.CoreInfo.Count)
			}
		}
		return devices, cores
	}
	if info.InferenceAcceleratorInfo != nil {
		for _, a := range info.InferenceAcceleratorInfo.Accelerators {
			if a.Manufacturer != nil && *a.Manufacturer == "AWS" && a.Count != nil {
				devices += int64(*a.Count)
			}
		}
	}
	return devices, cores
}

// efas is the vpc.amazonaws.com/efa capacity: the class's efa-only
// interfaces when it lists interfaces, else every EFA interface the type
// supports.
func efas(info *ec2types.InstanceTypeInfo, interfaces []*awsv1.NetworkInterface) int64 {
	if interfaces != nil {
		return int64(efaOnly(interfaces, -1))
	}
	if info.NetworkInfo == nil || info.NetworkInfo.EfaInfo == nil || info.NetworkInfo.EfaInfo.MaximumEfaInterfaces == nil {
		return 0
	}
	return int64(*info.NetworkInfo.EfaInfo.MaximumEfaInterfaces)
}

// overhead is kube-reserved + system-reserved + the hard eviction thresholds:
// what the kubelet subtracts from capacity to get allocatable.
func overhead(info *ec2types.InstanceTypeInfo, s *settings, opts Options, capacity corev1.ResourceList) corev1.ResourceList {
	total := kubeReserved(info, s, opts)
	for n, q := range s.systemReserved {
		addTo(total, n, q)
	}
	for n, q := range evictionThreshold(s, capacity) {
		addTo(total, n, q)
	}
	return total
}

func addTo(l corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	if have, ok := l[n]; ok {
		have.Add(q)
		l[n] = have
		return
	}
	l[n] = q.DeepCopy()
}

// cpuReservedSteps are the shares of each range of a node's CPU (in millicores)
// that kube-reserved holds back, as the EKS AMIs and Bottlerocket compute it.
var cpuReservedSteps = []struct {
	from, to int64
	share    float64
}{
	{0, 1000, 0.06},
	{1000, 2000, 0.01},
	{2000, 4000, 0.005},
	{4000, 1 << 31, 0.0025},
}

// kubeReserved: 6% of the first core, 1% of the second, 0.5% of the third and
// fourth, 0.25% of every further core; 11 MiB per pod + 255 MiB of memory; 1Gi
// of ephemeral storage. Keys set in the class's kubelet.kubeReserved replace
// the computed ones.
func kubeReserved(info *ec2types.InstanceTypeInfo, s *settings, opts Options) corev1.ResourceList {
	millis := vcpus(info) * 1000
	var cpu int64
	for _, step := range cpuReservedSteps {
		if millis < step.from {
			break
		}
		span := min(millis, step.to) - step.from
		cpu += int64(float64(span) * step.share)
	}
	// Families whose bootstrap sizes reserved memory by the ENI pod limit do
	// so whatever maxPods says, and without reserved ENIs.
	podCount := pods(info, s, opts.ReservedENIs)
	if s.family.UsesENILimitedMemoryOverhead {
		podCount = eniLimitedPods(info, 0, s.networkInterfaces)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*podCount+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	for n, q := range s.kubeReserved {
		out[n] = q.DeepCopy()
	}
	return out
}

// evictionThreshold: memory.available 100Mi and nodefs.available 10% unless
// kubelet.evictionHard sets them. Soft thresholds only warn first and do not
// reduce allocatable.
func evictionThreshold(s *settings, capacity corev1.ResourceList) corev1.ResourceList {
	mem, storage := capacity[corev1.ResourceMemory], capacity[corev1.ResourceEphemeralStorage]
	out := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: threshold{percent: 10, relative: true}.of(storage),
	}
	if s.evictionMemory != nil {
		out[corev1.ResourceMemory] = s.evictionMemory.of(mem)
	}
	if s.evictionNodeFS != nil {
		out[corev1.ResourceEphemeralStorage] = s.evictionNodeFS.of(storage)
	}
	return out
}
