package instancetype

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// raw holds the DescribeInstanceTypes facts of a real type that the math
// reads, copied from ec2-instance-types.json.
type raw struct {
	name   string
	vcpu   int32
	memMiB int64
	arm    bool
	// cards lists the maximum ENIs of each network card; card 0 is the default.
	cards  []int32
	ipv4   int32
	gpus   []gpu
	neuron *neuronDevice
	efa    int32
	nvmeGB int64
}

type gpu struct {
	name, manufacturer string
	count, memMiB      int32
}

type neuronDevice struct {
	name         string
	count, cores int32
}

func (r raw) info() *ec2types.InstanceTypeInfo {
	arch := ec2types.ArchitectureTypeX8664
	if r.arm {
		arch = ec2types.ArchitectureTypeArm64
	}
	info := &ec2types.InstanceTypeInfo{
		InstanceType:          ec2types.InstanceType(r.name),
		VCpuInfo:              &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(r.vcpu)},
		MemoryInfo:            &ec2types.MemoryInfo{SizeInMiB: aws.Int64(r.memMiB)},
		ProcessorInfo:         &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{arch}},
		SupportedUsageClasses: []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot},
		Hypervisor:            ec2types.InstanceTypeHypervisorNitro,
		NetworkInfo: &ec2types.NetworkInfo{
			Ipv4AddressesPerInterface: aws.Int32(r.ipv4),
			DefaultNetworkCardIndex:   aws.Int32(0),
		},
	}
	var total int32
	for i, n := range r.cards {
		info.NetworkInfo.NetworkCards = append(info.NetworkInfo.NetworkCards, ec2types.NetworkCardInfo{NetworkCardIndex: aws.Int32(int32(i)), MaximumNetworkInterfaces: aws.Int32(n)})
		total += n
	}
	info.NetworkInfo.MaximumNetworkInterfaces = aws.Int32(total)
	if r.efa > 0 {
		info.NetworkInfo.EfaSupported = aws.Bool(true)
		info.NetworkInfo.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(r.efa)}
	}
	if len(r.gpus) > 0 {
		info.GpuInfo = &ec2types.GpuInfo{}
		for _, g := range r.gpus {
			info.GpuInfo.Gpus = append(info.GpuInfo.Gpus, ec2types.GpuDeviceInfo{Name: aws.String(g.name), Manufacturer: aws.String(g.manufacturer), Count: aws.Int32(g.count), MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(g.memMiB)}})
		}
	}
	if r.neuron != nil {
		info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{
			Name: aws.String(r.neuron.name), Count: aws.Int32(r.neuron.count), CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(r.neuron.cores)},
		}}}
	}
	if r.nvmeGB > 0 {
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: aws.Int64(r.nvmeGB), NvmeSupport: ec2types.EphemeralNvmeSupportRequired}
	}
	return info
}

// nodeClass is an EC2NodeClass with the alias of family and one subnet.
func nodeClass(aliasFamily string, mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: aliasFamily + "@latest"}}
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"}}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func ptr[T any](v T) *T { return &v }
