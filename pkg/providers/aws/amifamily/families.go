package amifamily

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// AMIFamilyWindows2025 is upstream's amiFamily for Windows Server 2025 (from
// upstream v1.9), kept here for callers of this package.
const AMIFamilyWindows2025 = v1.AMIFamilyWindows2025

// Operating systems (values of kubernetes.io/os).
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// Family holds what Karpenter needs to know about one AMI family.
type Family struct {
	// Name is the amiFamily value, e.g. AL2023.
	Name string
	// Alias is the family part of an alias (al2023); "" for Custom.
	Alias string
	// OS is the kubernetes.io/os of nodes running the family.
	OS string
	// WindowsBuild is the node.kubernetes.io/windows-build of Windows families.
	WindowsBuild string
	// EphemeralBlockDevice is the device whose size is the node's
	// ephemeral-storage (kubelet and container images live there).
	EphemeralBlockDevice string
	// DefaultBlockDeviceMappings are used when the EC2NodeClass has none.
	DefaultBlockDeviceMappings []v1.BlockDeviceMapping
	// Kubelet features of the family's bootstrap (upstream's feature flags):
	// whether podsPerCore and evictionSoft are honored, whether max pods
	// follows the ENI limit, and whether kube-reserved memory is computed
	// from the ENI-limited pod count.
	PodsPerCoreEnabled           bool
	EvictionSoftEnabled          bool
	SupportsENILimitedPodDensity bool
	UsesENILimitedMemoryOverhead bool

	// MinKubernetesMinor / MaxKubernetesMinor bound the Kubernetes 1.x
	// versions AWS publishes the family's EKS AMIs for (0: no bound).
	MinKubernetesMinor int
	MaxKubernetesMinor int
	// LatestOnly families publish no versioned SSM parameters.
	LatestOnly bool

	parameters func(k8sVersion, amiVersion string) []Parameter
}

// Parameter is one public SSM parameter an alias resolves through, and the
// requirements the AMI it names is compatible with.
type Parameter struct {
	Path string
	// Variants of the AMI: one requirement set each (the AL2 GPU AMI serves
	// both NVIDIA and Neuron instance types).
	Variants []Variant
}

// Parameters are the SSM parameters of alias version amiVersion ("latest" or
// a release such as v20251115) for Kubernetes k8sVersion ("1.34"). Custom has none.
func (f *Family) Parameters(k8sVersion, amiVersion string) []Parameter {
	if f.parameters == nil {
		return nil
	}
	return f.parameters(k8sVersion, amiVersion)
}

// defaultEBS is upstream's default root volume: 20Gi encrypted gp3.
func defaultEBS(size string) *v1.BlockDevice {
	q := resource.MustParse(size)
	return &v1.BlockDevice{VolumeSize: &q, VolumeType: ptr.To("gp3"), Encrypted: ptr.To(true)}
}

func isLatest(amiVersion string) bool { return amiVersion == v1.AliasVersionLatest }

func al2Parameters(k8s, ver string) []Parameter {
	name := func(kind string) string {
		if isLatest(ver) {
			return "recommended"
		}
		return fmt.Sprintf("amazon-eks%s-node-%s-%s", kind, k8s, ver)
	}
	base := "/aws/service/eks/optimized-ami/" + k8s
	return []Parameter{
		{Path: fmt.Sprintf("%s/amazon-linux-2/%s/image_id", base, name("")), Variants: []Variant{VariantStandard}},
		{Path: fmt.Sprintf("%s/amazon-linux-2-arm64/%s/image_id", base, name("-arm64")), Variants: []Variant{VariantStandard}},
		{Path: fmt.Sprintf("%s/amazon-linux-2-gpu/%s/image_id", base, name("-gpu")), Variants: []Variant{VariantNeuron, VariantNvidia}},
	}
}

func al2023Parameters(k8s, ver string) []Parameter {
	var out []Parameter
	for _, av := range []struct {
		arch    string
		variant Variant
	}{
		{"x86_64", VariantStandard}, {"x86_64", VariantNvidia}, {"x86_64", VariantNeuron},
		{"arm64", VariantStandard}, {"arm64", VariantNvidia},
	} {
		name := "recommended"
		if !isLatest(ver) {
			name = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", av.arch, av.variant, k8s, ver)
		}
		out = append(out, Parameter{
			Path:     fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8s, av.arch, av.variant, name),
			Variants: []Variant{av.variant},
		})
	}
	return out
}

func bottlerocketParameters(k8s, ver string) []Parameter {
	// Bottlerocket releases are written v1.50.0 on GitHub but 1.50.0 in SSM;
	// both are accepted.
	ver = strings.TrimPrefix(ver, "v")
	return []Parameter{
		{Path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/x86_64/%s/image_id", k8s, ver), Variants: []Variant{VariantStandard, VariantNeuron}},
		{Path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/arm64/%s/image_id", k8s, ver), Variants: []Variant{VariantStandard}},
		{Path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/x86_64/%s/image_id", k8s, ver), Variants: []Variant{VariantNvidia}},
		{Path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/arm64/%s/image_id", k8s, ver), Variants: []Variant{VariantNvidia}},
	}
}

func windowsParameters(year string) func(k8s, ver string) []Parameter {
	return func(k8s, _ string) []Parameter {
		return []Parameter{{
			Path:     fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			Variants: []Variant{VariantWindows},
		}}
	}
}

func windows(name, year, build string, minMinor int) *Family {
	return &Family{
		Name: name, Alias: strings.ToLower(name), OS: OSWindows, WindowsBuild: build,
		EphemeralBlockDevice:       "/dev/sda1",
		DefaultBlockDeviceMappings: []v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), EBS: defaultEBS("50Gi")}},
		// The Windows bootstrap sets no pods-per-core limit: pod density is
		// maxPods or 110, never the ENI limit.
		EvictionSoftEnabled: true,
		MinKubernetesMinor:  minMinor, LatestOnly: true,
		parameters: windowsParameters(year),
	}
}

// Families are the known AMI families, in upstream's order.
var Families = []*Family{
	{
		Name: v1.AMIFamilyAL2, Alias: "al2", OS: OSLinux,
		EphemeralBlockDevice:       "/dev/xvda",
		DefaultBlockDeviceMappings: []v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS("20Gi")}},
		PodsPerCoreEnabled:         true, EvictionSoftEnabled: true, SupportsENILimitedPodDensity: true, UsesENILimitedMemoryOverhead: true,
		// AWS publishes no AL2 EKS AMIs for Kubernetes 1.33 and later.
		MaxKubernetesMinor: 32,
		parameters:         al2Parameters,
	},
	{
		Name: v1.AMIFamilyAL2023, Alias: "al2023", OS: OSLinux,
		EphemeralBlockDevice:       "/dev/xvda",
		DefaultBlockDeviceMappings: []v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS("20Gi")}},
		PodsPerCoreEnabled:         true, EvictionSoftEnabled: true, SupportsENILimitedPodDensity: true, UsesENILimitedMemoryOverhead: true,
		parameters: al2023Parameters,
	},
	{
		Name: v1.AMIFamilyBottlerocket, Alias: "bottlerocket", OS: OSLinux,
		// Bottlerocket keeps its OS on a small /dev/xvda and containers on /dev/xvdb.
		EphemeralBlockDevice: "/dev/xvdb",
		DefaultBlockDeviceMappings: []v1.BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS("4Gi")},
			{DeviceName: ptr.To("/dev/xvdb"), EBS: defaultEBS("20Gi")},
		},
		SupportsENILimitedPodDensity: true,
		parameters:                   bottlerocketParameters,
	},
	windows(v1.AMIFamilyWindows2019, "2019", "10.0.17763", 0),
	windows(v1.AMIFamilyWindows2022, "2022", "10.0.20348", 0),
	// Windows Server 2025 EKS AMIs exist from Kubernetes 1.35 on.
	windows(AMIFamilyWindows2025, "2025", "10.0.26100", 35),
	{
		Name: v1.AMIFamilyCustom, OS: OSLinux,
		EphemeralBlockDevice:       "/dev/xvda",
		DefaultBlockDeviceMappings: []v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS("20Gi")}},
		PodsPerCoreEnabled:         true, EvictionSoftEnabled: true, SupportsENILimitedPodDensity: true, UsesENILimitedMemoryOverhead: true,
	},
}

// Get returns the family of an amiFamily value (AL2023); unknown names give nil.
func Get(name string) *Family {
	for _, f := range Families {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// ForAlias returns the family of an alias family (al2023, any case); nil if unknown.
func ForAlias(alias string) *Family {
	for _, f := range Families {
		if f.Alias != "" && strings.EqualFold(f.Alias, alias) {
			return f
		}
	}
	return nil
}

// ForNodeClass is the family that bootstraps the class's nodes: amiFamily
// when set, else the alias's family, else Custom.
func ForNodeClass(nc *v1.EC2NodeClass) *Family {
	if nc.Spec.AMIFamily != nil {
		if f := Get(*nc.Spec.AMIFamily); f != nil {
			return f
		}
	}
	if a := nc.Alias(); a != nil {
		if f := ForAlias(a.Family); f != nil {
			return f
		}
	}
	return Get(v1.AMIFamilyCustom)
}
