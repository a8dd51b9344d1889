package instancetype

import (
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// family is what the capacity math needs to know about an AMI family.
type family struct {
	// ephemeralDevice is the device whose size is the node's ephemeral
	// storage (kubelet root dir and container images); "" for Custom, whose
	// volumes come from the AMI itself.
	ephemeralDevice string
	// defaultVolumes are the volumes launched when the EC2NodeClass has no
	// blockDeviceMappings, by device name.
	defaultVolumes map[string]resource.Quantity
	// eniLimitedPodDensity: without kubelet maxPods, the node runs as many
	// pods as the VPC CNI has IPs for (else 110, the kubelet default).
	eniLimitedPodDensity bool
	// eniLimitedMemoryOverhead: kube-reserved memory is computed from the
	// ENI-limited pod count even when maxPods says otherwise (the EKS AMIs'
	// bootstrap does so).
	eniLimitedMemoryOverhead bool
	// podsPerCore: kubelet podsPerCore is honoured.
	podsPerCore bool
	// windowsBuild is the node.kubernetes.io/windows-build value, "" for Linux.
	windowsBuild string
}

// Default volume sizes of the AMI families (upstream's defaults).
var (
	// defaultEBSSize is the size of the root volume of AL2 and AL2023, of
	// Bottlerocket's data volume, and the assumption for Custom AMIs.
	defaultEBSSize = resource.MustParse("20Gi")
	// bottlerocketOSSize is Bottlerocket's OS volume; it holds no pod data.
	bottlerocketOSSize = resource.MustParse("4Gi")
	windowsRootSize    = resource.MustParse("50Gi")
)

// Windows builds by family (the build number of each Windows Server release).
const (
	windowsBuild2019 = "10.0.17763"
	windowsBuild2022 = "10.0.20348"
	windowsBuild2025 = "10.0.26100"
	// amiFamilyWindows2025 is accepted although the API enum does not list it yet.
	amiFamilyWindows2025 = "Windows2025"
)

func linuxFamily(device string, volumes map[string]resource.Quantity) family {
	return family{ephemeralDevice: device, defaultVolumes: volumes, eniLimitedPodDensity: true, eniLimitedMemoryOverhead: true, podsPerCore: true}
}

func windowsFamily(build string) family {
	// Windows nodes do not use the VPC CNI's per-ENI IPs for pod density and
	// the kubelet ignores podsPerCore there.
	return family{ephemeralDevice: "/dev/sda1", defaultVolumes: map[string]resource.Quantity{"/dev/sda1": windowsRootSize}, windowsBuild: build}
}

// familyOf returns the table entry of an amiFamily value (EC2NodeClass.AMIFamily()).
// Unknown values are treated as Custom.
func familyOf(name string) family {
	switch name {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023:
		return linuxFamily("/dev/xvda", map[string]resource.Quantity{"/dev/xvda": defaultEBSSize})
	case awsv1.AMIFamilyBottlerocket:
		f := linuxFamily("/dev/xvdb", map[string]resource.Quantity{"/dev/xvda": bottlerocketOSSize, "/dev/xvdb": defaultEBSSize})
		// Bottlerocket reserves memory for the pods the node actually runs.
		f.eniLimitedMemoryOverhead = false
		return f
	case awsv1.AMIFamilyWindows2019:
		return windowsFamily(windowsBuild2019)
	case awsv1.AMIFamilyWindows2022:
		return windowsFamily(windowsBuild2022)
	case amiFamilyWindows2025:
		return windowsFamily(windowsBuild2025)
	default:
		return linuxFamily("", nil)
	}
}

func (f family) windows() bool { return f.windowsBuild != "" }
