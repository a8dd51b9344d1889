package awsemulator

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The facts file: 1,363 real instance types with Karpenter's labels, ENI limits and
// us-east-1 on-demand prices (a copy of shared/reference/ec2-instance-types.json).
//
//go:embed data/ec2-instance-types.json.gz
var instanceTypesGz []byte

type factsVPC struct {
	ENIs        int      `json:"enis"`
	IPv4PerENI  int      `json:"ipv4PerEni"`
	Trunking    bool     `json:"trunking"`
	BranchENIs  int      `json:"branchEnis"`
	DefaultCard int      `json:"defaultCard"`
	Cards       [][2]int `json:"cards"` // [max interfaces, card index]
	Hypervisor  string   `json:"hypervisor"`
	BareMetal   bool     `json:"bareMetal"`
}

type factsEntry struct {
	Name             string            `json:"name"`
	Labels           map[string]string `json:"labels"`
	VPC              *factsVPC         `json:"vpc"`
	OnDemandUSD      float64           `json:"onDemandUSD_us_east_1"`
	EFAMaxInterfaces int               `json:"efaMaxInterfaces"`
}

// instanceType is one type of the catalog: immutable, shared by every emulator.
type instanceType struct {
	name        string
	arch        string // x86_64 | arm64 (the Karpenter arch label's EC2 spelling)
	vcpu        int
	memoryMiB   int64
	onDemandUSD float64 // 0: the facts file has no price
	maxENIs     int
	ipv4PerENI  int
	hypervisor  string
	// efaMax is the type's maximum EFA interfaces (0: no EFA support), and
	// cards its network cards (index -> maximum interfaces), as
	// DescribeInstanceTypes reports them.
	efaMax       int
	cards        map[int]int
	labels       map[string]string
	filterFields map[string][]string // DescribeInstanceTypes filter name -> values
	xml          string              // the <item> body of DescribeInstanceTypes
}

type catalog struct {
	types []*instanceType
	index map[string]*instanceType
}

var (
	catalogOnce sync.Once
	catalogVal  *catalog
	catalogErr  error
)

func loadCatalog() (*catalog, error) {
	catalogOnce.Do(func() { catalogVal, catalogErr = buildCatalog() })
	return catalogVal, catalogErr
}

func buildCatalog() (*catalog, error) {
	zr, err := gzip.NewReader(bytes.NewReader(instanceTypesGz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var facts []factsEntry
	if err := json.Unmarshal(raw, &facts); err != nil {
		return nil, fmt.Errorf("decoding instance type facts: %w", err)
	}
	cat := &catalog{index: map[string]*instanceType{}}
	for i := range facts {
		it := newInstanceType(&facts[i])
		cat.types = append(cat.types, it)
		cat.index[it.name] = it
	}
	sort.Slice(cat.types, func(i, j int) bool { return cat.types[i].name < cat.types[j].name })
	return cat, nil
}

// synthesizedVPC covers the few types the facts file has no ENI limits for (the
// values AWS documents for them).
func synthesizedVPC(name string) *factsVPC {
	if strings.HasPrefix(name, "trn2.") {
		cards := make([][2]int, 16)
		for i := range cards {
			cards[i] = [2]int{2, i}
		}
		return &factsVPC{ENIs: 32, IPv4PerENI: 50, Cards: cards, Hypervisor: "nitro"}
	}
	return &factsVPC{ENIs: 2, IPv4PerENI: 50, Cards: [][2]int{{2, 0}}, Hypervisor: "nitro"}
}

var gpuNames = map[string]string{
	"a100": "A100", "h100": "H100", "h200": "H200", "b200": "B200", "b300": "B300", "v100": "V100",
	"t4": "T4", "t4g": "T4g", "a10g": "A10G", "l4": "L4", "l40s": "L40S",
	"radeon-pro-v520": "Radeon Pro V520", "rtx-pro-4500": "RTX PRO 4500", "rtx-pro-server-6000": "RTX PRO Server 6000",
}

var manufacturerNames = map[string]string{"intel": "Intel", "amd": "AMD", "aws": "AWS", "nvidia": "NVIDIA", "qualcomm": "Qualcomm"}

// neuronDevices: per accelerator label, the NeuronInfo device name, cores and memory.
var neuronDevices = map[string]struct {
	name   string
	cores  int
	memMiB int
}{
	"inferentia":  {"Inferentia", 4, 8192},
	"inferentia2": {"Inferentia2", 2, 32768},
	"trainium":    {"Trainium", 2, 32768},
	"trainium2":   {"Trainium2", 8, 98304},
}

func titleWords(s string) string {
	words := strings.Split(s, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func newInstanceType(f *factsEntry) *instanceType {
	l := f.Labels
	vpc := f.VPC
	if vpc == nil {
		vpc = synthesizedVPC(f.Name)
	}
	arch := "x86_64"
	if l["kubernetes.io/arch"] == "arm64" {
		arch = "arm64"
	}
	vcpu := atoi(l["karpenter.k8s.aws/instance-cpu"])
	mem := int64(atoi(l["karpenter.k8s.aws/instance-memory"]))
	hypervisor := l["karpenter.k8s.aws/instance-hypervisor"]
	family, size, _ := strings.Cut(f.Name, ".")
	bareMetal := vpc.BareMetal || strings.HasPrefix(size, "metal")
	archs := []string{arch}
	if arch == "x86_64" && hypervisor == "xen" && vcpu <= 2 {
		archs = []string{"i386", "x86_64"} // old Xen generations also boot 32-bit AMIs
	}
	burstable := strings.HasPrefix(family, "t") && len(family) > 1 && family[1] >= '0' && family[1] <= '9'
	currentGen := hypervisor != "xen"
	efa := f.EFAMaxInterfaces > 0
	nvme := l["karpenter.k8s.aws/instance-local-nvme"]
	eit := l["karpenter.k8s.aws/instance-encryption-in-transit-supported"] == "true"

	it := &instanceType{
		name: f.Name, arch: arch, vcpu: vcpu, memoryMiB: mem, onDemandUSD: f.OnDemandUSD,
		maxENIs: vpc.ENIs, ipv4PerENI: vpc.IPv4PerENI, hypervisor: hypervisor, labels: l,
		efaMax: f.EFAMaxInterfaces, cards: map[int]int{},
	}
	for _, card := range vpc.Cards {
		it.cards[card[1]] = card[0]
	}
	it.filterFields = map[string][]string{
		"instance-type":                                {f.Name},
		"supported-virtualization-type":                {"hvm"},
		"processor-info.supported-architecture":        archs,
		"current-generation":                           {strconv.FormatBool(currentGen)},
		"bare-metal":                                   {strconv.FormatBool(bareMetal)},
		"hypervisor":                                   {hypervisor},
		"burstable-performance-supported":              {strconv.FormatBool(burstable)},
		"vcpu-info.default-vcpus":                      {strconv.Itoa(vcpu)},
		"memory-info.size-in-mib":                      {strconv.FormatInt(mem, 10)},
		"instance-storage-supported":                   {strconv.FormatBool(nvme != "")},
		"network-info.efa-supported":                   {strconv.FormatBool(efa)},
		"network-info.encryption-in-transit-supported": {strconv.FormatBool(eit)},
		"supported-usage-class":                        {"on-demand", "spot"},
		"supported-root-device-type":                   {"ebs"},
		"free-tier-eligible":                           {strconv.FormatBool(f.Name == "t2.micro" || f.Name == "t3.micro")},
	}

	var b xb
	b.leafAlways("instanceType", f.Name)
	b.boolean("currentGeneration", currentGen)
	b.boolean("freeTierEligible", f.Name == "t2.micro" || f.Name == "t3.micro")
	b.stringList("supportedUsageClasses", "item", []string{"on-demand", "spot"})
	b.stringList("supportedRootDeviceTypes", "item", []string{"ebs"})
	b.stringList("supportedVirtualizationTypes", "item", []string{"hvm"})
	b.boolean("bareMetal", bareMetal)
	b.leaf("hypervisor", hypervisor)

	b.open("processorInfo")
	b.stringList("supportedArchitectures", "item", archs)
	if mhz := atoi(l["karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"]); mhz > 0 {
		b.leafAlways("sustainedClockSpeedInGhz", strconv.FormatFloat(float64(mhz)/1000, 'f', -1, 64))
	}
	b.leaf("manufacturer", manufacturerNames[l["karpenter.k8s.aws/instance-cpu-manufacturer"]])
	b.close("processorInfo")

	threads := 2
	if arch == "arm64" || vcpu == 1 {
		threads = 1
	}
	b.open("vCpuInfo")
	b.integer("defaultVCpus", int64(vcpu))
	b.integer("defaultCores", int64(max(1, vcpu/threads)))
	b.integer("defaultThreadsPerCore", int64(threads))
	b.close("vCpuInfo")

	b.open("memoryInfo")
	b.integer("sizeInMiB", mem)
	b.close("memoryInfo")

	b.boolean("instanceStorageSupported", nvme != "")
	if nvme != "" {
		b.open("instanceStorageInfo")
		b.integer("totalSizeInGB", int64(atoi(nvme)))
		b.open("disks")
		b.open("item")
		b.integer("sizeInGB", int64(atoi(nvme)))
		b.integer("count", 1)
		b.leafAlways("type", "ssd")
		b.close("item")
		b.close("disks")
		b.leafAlways("nvmeSupport", "required")
		b.leafAlways("encryptionSupport", "required")
		b.close("instanceStorageInfo")
	}

	b.open("ebsInfo")
	if hypervisor == "xen" {
		b.leafAlways("ebsOptimizedSupport", "supported")
		b.leafAlways("nvmeSupport", "unsupported")
	} else {
		b.leafAlways("ebsOptimizedSupport", "default")
		b.leafAlways("nvmeSupport", "required")
	}
	b.leafAlways("encryptionSupport", "supported")
	if bw := atoi(l["karpenter.k8s.aws/instance-ebs-bandwidth"]); bw > 0 {
		b.open("ebsOptimizedInfo")
		b.integer("baselineBandwidthInMbps", int64(bw))
		b.integer("maximumBandwidthInMbps", int64(bw))
		b.close("ebsOptimizedInfo")
	}
	b.close("ebsInfo")

	perf := networkPerformance(atoi(l["karpenter.k8s.aws/instance-network-bandwidth"]))
	b.open("networkInfo")
	b.leafAlways("networkPerformance", perf)
	b.integer("maximumNetworkInterfaces", int64(vpc.ENIs))
	b.integer("maximumNetworkCards", int64(max(1, len(vpc.Cards))))
	b.integer("defaultNetworkCardIndex", int64(vpc.DefaultCard))
	b.open("networkCards")
	for _, card := range vpc.Cards {
		b.open("item")
		b.integer("networkCardIndex", int64(card[1]))
		b.leafAlways("networkPerformance", perf)
		b.integer("maximumNetworkInterfaces", int64(card[0]))
		b.close("item")
	}
	b.close("networkCards")
	b.integer("ipv4AddressesPerInterface", int64(vpc.IPv4PerENI))
	b.integer("ipv6AddressesPerInterface", int64(vpc.IPv4PerENI))
	b.boolean("ipv6Supported", hypervisor != "xen")
	if hypervisor == "xen" {
		b.leafAlways("enaSupport", "unsupported")
	} else {
		b.leafAlways("enaSupport", "required")
	}
	b.boolean("efaSupported", efa)
	if efa {
		b.open("efaInfo")
		b.integer("maximumEfaInterfaces", int64(f.EFAMaxInterfaces))
		b.close("efaInfo")
	}
	b.boolean("encryptionInTransitSupported", eit)
	b.close("networkInfo")

	// g6f/gr6f carry a fraction of a GPU: AWS reports a count of 0 (and Karpenter's label says so).
	if count, ok := l["karpenter.k8s.aws/instance-gpu-count"]; ok {
		n := atoi(count)
		gname := gpuNames[l["karpenter.k8s.aws/instance-gpu-name"]]
		if gname == "" {
			gname = titleWords(l["karpenter.k8s.aws/instance-gpu-name"])
		}
		gmem := int64(atoi(l["karpenter.k8s.aws/instance-gpu-memory"]))
		b.open("gpuInfo")
		b.open("gpus")
		b.open("item")
		b.leafAlways("name", gname)
		b.leafAlways("manufacturer", manufacturerNames[l["karpenter.k8s.aws/instance-gpu-manufacturer"]])
		b.integer("count", int64(n))
		b.open("memoryInfo")
		b.integer("sizeInMiB", gmem)
		b.close("memoryInfo")
		b.close("item")
		b.close("gpus")
		b.integer("totalGpuMemoryInMiB", gmem*int64(max(n, 1)))
		b.close("gpuInfo")
	}
	if n := atoi(l["karpenter.k8s.aws/instance-accelerator-count"]); n > 0 {
		accel := l["karpenter.k8s.aws/instance-accelerator-name"]
		if dev, ok := neuronDevices[accel]; ok {
			b.open("neuronInfo")
			b.open("neuronDevices")
			b.open("item")
			b.integer("count", int64(n))
			b.leafAlways("name", dev.name)
			b.open("coreInfo")
			b.integer("count", int64(dev.cores))
			b.integer("version", 2)
			b.close("coreInfo")
			b.open("memoryInfo")
			b.integer("sizeInMiB", int64(dev.memMiB))
			b.close("memoryInfo")
			b.close("item")
			b.close("neuronDevices")
			b.integer("totalNeuronDeviceMemoryInMiB", int64(dev.memMiB*n))
			b.close("neuronInfo")
		}
		if _, neuron := neuronDevices[accel]; !neuron || accel == "inferentia" {
			name := titleWords(accel)
			if accel == "qualcomm-ai100" {
				name = "Qualcomm AI100"
			}
			b.open("inferenceAcceleratorInfo")
			b.open("accelerators")
			b.open("item")
			b.integer("count", int64(n))
			b.leafAlways("name", name)
			b.leafAlways("manufacturer", manufacturerNames[l["karpenter.k8s.aws/instance-accelerator-manufacturer"]])
			b.close("item")
			b.close("accelerators")
			b.close("inferenceAcceleratorInfo")
		}
	}
	b.boolean("burstablePerformanceSupported", burstable)
	b.boolean("hibernationSupported", false)
	b.boolean("dedicatedHostsSupported", !burstable)
	b.boolean("autoRecoverySupported", !bareMetal)
	b.stringList("supportedBootModes", "item", []string{"legacy-bios", "uefi"})
	// Cluster placement groups take neither burstable, Mac nor flex types.
	strategies := []string{"partition", "spread"}
	if !burstable && !strings.HasPrefix(l["karpenter.k8s.aws/instance-family"], "mac") && l["karpenter.k8s.aws/instance-capability-flex"] != "true" {
		strategies = append([]string{"cluster"}, strategies...)
	}
	b.open("placementGroupInfo")
	b.stringList("supportedStrategies", "item", strategies)
	b.close("placementGroupInfo")
	it.xml = b.String()
	return it
}

// networkPerformance renders a bandwidth in Mbps as EC2's NetworkPerformance text.
func networkPerformance(mbps int) string {
	switch {
	case mbps <= 0:
		return "Moderate"
	case mbps < 1000:
		return "Up to 10 Gigabit"
	case mbps%1000 == 0:
		return fmt.Sprintf("%d Gigabit", mbps/1000)
	default:
		return fmt.Sprintf("%s Gigabit", strconv.FormatFloat(float64(mbps)/1000, 'f', -1, 64))
	}
}
