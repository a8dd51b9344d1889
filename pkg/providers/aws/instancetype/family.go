package instancetype

import (
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
)

// The capacity math reads the AMI families from amifamily's table, the one
// the EC2NodeClass controller resolves and validates with: its ephemeral
// device, default block device mappings and kubelet feature flags
// (SupportsENILimitedPodDensity, UsesENILimitedMemoryOverhead,
// PodsPerCoreEnabled).

// defaultEBSSize is assumed for an ephemeral volume whose size nothing says
// (upstream's DefaultEBS volume size).
var defaultEBSSize = resource.MustParse("20Gi")

// familyOf returns the family of an amiFamily value (EC2NodeClass.AMIFamily());
// unknown values are treated as Custom.
func familyOf(name string) *amifamily.Family {
	if f := amifamily.Get(name); f != nil {
		return f
	}
	return amifamily.Get(awsv1.AMIFamilyCustom)
}

// isCustom: a custom AMI's volume layout is unknown, so its ephemeral volume
// is taken to be the last block device mapping.
func isCustom(f *amifamily.Family) bool { return f.Name == awsv1.AMIFamilyCustom }

// isWindows: Windows nodes, with their build label and IP address resource.
func isWindows(f *amifamily.Family) bool { return f.OS == amifamily.OSWindows }

// defaultEphemeralSize is the size of the family's ephemeral device among its
// default block device mappings (those launched when the EC2NodeClass has none).
func defaultEphemeralSize(f *amifamily.Family) (resource.Quantity, bool) {
	for _, bdm := range f.DefaultBlockDeviceMappings {
		if bdm.DeviceName != nil && *bdm.DeviceName == f.EphemeralBlockDevice && bdm.EBS != nil && bdm.EBS.VolumeSize != nil {
			return *bdm.EBS.VolumeSize, true
		}
	}
	return resource.Quantity{}, false
}
