package nodeclass

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
)

func ami(id, arch string, extra ...corev1.NodeSelectorRequirement) v1.AMI {
	return v1.AMI{ID: id, Requirements: append([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}, extra...)}
}

func TestValidationTargetPrefersStandardAMIs(t *testing.T) {
	gpu := corev1.NodeSelectorRequirement{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}
	neuron := corev1.NodeSelectorRequirement{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}
	std := corev1.NodeSelectorRequirement{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}
	cases := []struct {
		amis         []v1.AMI
		id, instance string
	}{
		{[]v1.AMI{ami("ami-gpu", "amd64", gpu), ami("ami-arm", "arm64", std)}, "ami-arm", "m6g.large"},
		{[]v1.AMI{ami("ami-gpu", "arm64", gpu)}, "ami-gpu", "g5g.xlarge"},
		{[]v1.AMI{ami("ami-inf", "amd64", neuron)}, "ami-inf", "inf2.xlarge"},
		{[]v1.AMI{{ID: "ami-old", Deprecated: true, Requirements: ami("", "amd64").Requirements}, ami("ami-x", "amd64")}, "ami-x", "m5.large"},
		{nil, "", ""},
	}
	for _, c := range cases {
		id, it := validationTarget(c.amis)
		if id != c.id || it != c.instance {
			t.Errorf("%v: got %s %s, want %s %s", c.amis, id, it, c.id, c.instance)
		}
	}
}

func TestDryRunInputs(t *testing.T) {
	v := newValidation(nil, nil, nil, &settings.Options{ClusterName: "demo"}, nil)
	nc := &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.EC2NodeClassSpec{
		AMISelectorTerms: []v1.AMISelectorTerm{{Alias: "bottlerocket@latest"}},
		Tags:             map[string]string{"team": "a"},
	}}
	tags, err := v.tags(nc)
	if err != nil {
		t.Fatal(err)
	}
	if tags["kubernetes.io/cluster/demo"] != "owned" || tags["eks:eks-cluster-name"] != "demo" || tags["karpenter.k8s.aws/ec2nodeclass"] != "default" || tags["team"] != "a" {
		t.Errorf("tags %v", tags)
	}
	// Default block devices come from the family: Bottlerocket's two volumes.
	in := v.inputs(nc, tags)
	lt := ltBlockDevices(in.BlockDevices)
	if len(lt) != 2 || aws.ToString(lt[0].DeviceName) != "/dev/xvda" || aws.ToInt32(lt[0].Ebs.VolumeSize) != 4 || aws.ToInt32(lt[1].Ebs.VolumeSize) != 20 ||
		string(lt[1].Ebs.VolumeType) != "gp3" || !aws.ToBool(lt[1].Ebs.Encrypted) {
		t.Errorf("block devices %+v", in.BlockDevices)
	}
	// A spec mapping replaces them; sizes round up to whole GiB.
	size := resource.MustParse("100G")
	nc.Spec.BlockDeviceMappings = []*v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvdb"), EBS: &v1.BlockDevice{VolumeSize: &size, IOPS: ptr.To[int64](3000)}}}
	run := runBlockDevices(v.inputs(nc, tags).BlockDevices)
	if len(run) != 1 || aws.ToInt32(run[0].Ebs.VolumeSize) != 94 || aws.ToInt32(run[0].Ebs.Iops) != 3000 {
		t.Errorf("run block devices %+v", run[0].Ebs)
	}
	if in.hash() == v.inputs(nc, tags).hash() {
		t.Error("block devices must change the validation cache key")
	}
	// Restricted keys are refused, naming them.
	nc.Spec.Tags = map[string]string{"kubernetes.io/cluster/other": "owned", "karpenter.sh/nodepool": "x"}
	if _, err := v.tags(nc); err == nil || !strings.Contains(err.Error(), "spec.tags: karpenter.sh/nodepool, kubernetes.io/cluster/other") {
		t.Errorf("err = %v", err)
	}
	hop := ptr.To[int64](2)
	md := launchtemplate.MetadataOptions(&v1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPTokens: ptr.To("required"), HTTPPutResponseHopLimit: hop})
	if string(md.HttpTokens) != "required" || aws.ToInt32(md.HttpPutResponseHopLimit) != 2 {
		t.Errorf("metadata %+v", md)
	}
}

// A class listing network interfaces dry-runs them on a type of the AMI's
// architecture that holds them; interfaces no listed type holds are left
// out of the dry runs (the launch names them when EC2 refuses them).
func TestDryRunsCarryNetworkInterfaces(t *testing.T) {
	v := newValidation(nil, nil, nil, &settings.Options{ClusterName: "demo"}, nil)
	primary := &v1.NetworkInterface{InterfaceType: v1.InterfaceTypeInterface}
	for _, c := range []struct {
		name       string
		arch       string
		interfaces []*v1.NetworkInterface
		wantType   string
		carried    bool
	}{
		{"none", "amd64", nil, "m5.large", false},
		{"efa on card 1", "amd64", []*v1.NetworkInterface{primary, {NetworkCardIndex: 1, InterfaceType: v1.InterfaceTypeEFAOnly}}, "trn1n.32xlarge", true},
		{"card 20", "amd64", []*v1.NetworkInterface{primary, {NetworkCardIndex: 20, InterfaceType: v1.InterfaceTypeEFAOnly}}, "p5.48xlarge", true},
		{"arm efa", "arm64", []*v1.NetworkInterface{primary, {DeviceIndex: 1, InterfaceType: v1.InterfaceTypeEFAOnly}}, "c8gn.48xlarge", true},
		{"beyond every type", "arm64", []*v1.NetworkInterface{primary, {NetworkCardIndex: 5, InterfaceType: v1.InterfaceTypeInterface}}, "m6g.large", false},
	} {
		nc := &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.EC2NodeClassSpec{NetworkInterfaces: c.interfaces}}
		nc.Status.AMIs = []v1.AMI{ami("ami-1", c.arch)}
		in := v.inputs(nc, map[string]string{})
		if in.InstanceType != c.wantType || (len(in.NetworkInterfaces) > 0) != c.carried {
			t.Errorf("%s: dry runs on %s with %d interfaces, want %s carrying them %v", c.name, in.InstanceType, len(in.NetworkInterfaces), c.wantType, c.carried)
		}
	}
}
