package amifamily

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// itSpec describes a test instance type the way the instancetype package
// labels real ones (accelerator keys DoesNotExist when absent).
type itSpec struct {
	name, arch, os string
	gpus, neuron   int
	pods, efa      int64
}

func instanceType(s itSpec) *scheduling.InstanceType {
	if s.os == "" {
		s.os = "linux"
	}
	count := func(key string, n int) scheduling.Requirement {
		if n == 0 {
			return scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist)
		}
		return scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, itoa(n))
	}
	reqs := []scheduling.Requirement{
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, s.name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, s.arch),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, s.os),
		count(awsv1.LabelInstanceGPUCount, s.gpus),
		count(awsv1.LabelInstanceAcceleratorCount, s.neuron),
	}
	if s.os == "windows" {
		reqs = append(reqs, scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpIn, "10.0.20348"))
	} else {
		reqs = append(reqs, scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpDoesNotExist))
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:  resource.MustParse("2"),
		corev1.ResourcePods: *resource.NewQuantity(s.pods, resource.DecimalSI),
	}
	if s.efa > 0 {
		capacity[awsv1.ResourceEFA] = *resource.NewQuantity(s.efa, resource.DecimalSI)
	}
	return &scheduling.InstanceType{Name: s.name, Requirements: scheduling.NewRequirements(reqs...), Capacity: capacity}
}

func itoa(n int) string { return resource.NewQuantity(int64(n), resource.DecimalSI).String() }

// ami builds a status.amis entry as the AMI provider writes it.
func ami(id, arch string, variant Variant, family *Family) awsv1.AMI {
	reqs := append([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}, variant.Requirements(family)...)
	return awsv1.AMI{ID: id, Name: id, Requirements: reqs}
}

func nodeClass(family string, amis ...awsv1.AMI) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMIFamily:        ptr.To(family),
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"k": "v"}}},
		},
		Status: awsv1.EC2NodeClassStatus{
			AMIs:            amis,
			InstanceProfile: "profile-default",
			SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}},
		},
	}
}

func nodeClaim() *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{
			v1.NodePoolLabelKey:                     "default",
			corev1.LabelInstanceTypeStable:          "m5.large",
			corev1.LabelTopologyZone:                "us-west-2a",
			"node.kubernetes.io/lifecycle":          "spot",
			"node-restriction.kubernetes.io/pinned": "true",
			"example.k8s.io/x":                      "y",
			"team":                                  "payments",
			"karpenter.k8s.aws/instance-family":     "m5",
		}},
		Spec: v1.NodeClaimSpec{
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "cni.example.com/not-ready", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func launchOptions() LaunchOptions {
	return LaunchOptions{
		ClusterName:     "test-cluster",
		ClusterEndpoint: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		ClusterCABundle: "Y2EtYnVuZGxl",
		ClusterCIDR:     "10.100.0.0/16",
		KubeDNSIP:       "10.100.0.10",
	}
}

func summary(lts []*LaunchTemplate) []string {
	var out []string
	for _, lt := range lts {
		var names []string
		for _, it := range lt.InstanceTypes {
			names = append(names, it.Name)
		}
		out = append(out, lt.ImageID+" efa="+itoa(lt.EFACount)+" ["+strings.Join(names, ",")+"]")
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

func TestResolvePicksAMIByArchAndAcceleratorAndGroupsByMaxPods(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023,
		ami("ami-x86", "amd64", VariantStandard, al2023),
		ami("ami-arm", "arm64", VariantStandard, al2023),
		ami("ami-nvidia", "amd64", VariantNvidia, al2023),
		ami("ami-neuron", "amd64", VariantNeuron, al2023),
	)
	its := []*scheduling.InstanceType{
		instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29}),
		instanceType(itSpec{name: "g4dn.xlarge", arch: "amd64", gpus: 1, pods: 29}),
		instanceType(itSpec{name: "m6g.large", arch: "arm64", pods: 29}),
		instanceType(itSpec{name: "m5.xlarge", arch: "amd64", pods: 58}),
		instanceType(itSpec{name: "inf2.xlarge", arch: "amd64", neuron: 1, pods: 58}),
		instanceType(itSpec{name: "c5.large", arch: "amd64", pods: 29}),
	}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{
		"ami-x86 efa=0 [m5.large,c5.large]",
		"ami-x86 efa=0 [m5.xlarge]",
		"ami-arm efa=0 [m6g.large]",
		"ami-nvidia efa=0 [g4dn.xlarge]",
		"ami-neuron efa=0 [inf2.xlarge]",
	})
	for i, want := range []string{"maxPods: 29", "maxPods: 58", "maxPods: 29", "maxPods: 29", "maxPods: 58"} {
		if !strings.Contains(lts[i].UserData, want) {
			t.Errorf("launch template %d (%s) user data lacks %q:\n%s", i, summary(lts)[i], want, lts[i].UserData)
		}
	}
	compareGolden(t, filepath.Join("testdata", "resolve", "al2023-m5.large.golden"), lts[0].UserData)
}

func TestResolvePrefersFirstNonDeprecatedAMI(t *testing.T) {
	al2 := Get(awsv1.AMIFamilyAL2)
	old := ami("ami-deprecated", "amd64", VariantStandard, al2)
	old.Deprecated = true
	nc := nodeClass(awsv1.AMIFamilyAL2, old, ami("ami-newest", "amd64", VariantStandard, al2), ami("ami-older", "amd64", VariantStandard, al2))
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeSpot, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{"ami-newest efa=0 [m5.large]"})

	// Only a deprecated image fits: it is used rather than nothing.
	nc.Status.AMIs = []awsv1.AMI{old}
	lts, err = NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeSpot, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{"ami-deprecated efa=0 [m5.large]"})
}

func TestResolveWindowsAMIOnlyForWindowsTypes(t *testing.T) {
	win := Get(awsv1.AMIFamilyWindows2022)
	nc := nodeClass(awsv1.AMIFamilyWindows2022, ami("ami-win", "amd64", VariantWindows, win))
	its := []*scheduling.InstanceType{
		instanceType(itSpec{name: "m5.large", arch: "amd64", os: "windows", pods: 110}),
		instanceType(itSpec{name: "m6g.large", arch: "arm64", pods: 29}),
	}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{"ami-win efa=0 [m5.large]"})
	if !strings.Contains(lts[0].UserData, "--max-pods=110") || !strings.HasPrefix(lts[0].UserData, "<powershell>") {
		t.Errorf("Windows user data:\n%s", lts[0].UserData)
	}
	if got := *lts[0].BlockDeviceMappings[0].DeviceName; got != "/dev/sda1" || lts[0].BlockDeviceMappings[0].EBS.VolumeSize.String() != "50Gi" {
		t.Errorf("Windows root volume %s %s, want /dev/sda1 50Gi", got, lts[0].BlockDeviceMappings[0].EBS.VolumeSize)
	}
}

func TestResolveClassMaxPodsAndDNSWin(t *testing.T) {
	al2 := Get(awsv1.AMIFamilyAL2)
	nc := nodeClass(awsv1.AMIFamilyAL2, ami("ami-x86", "amd64", VariantStandard, al2))
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](50), ClusterDNS: []string{"172.20.0.10"}}
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 50})}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	ud := lts[0].UserData
	for _, want := range []string{"--max-pods=50", "--dns-cluster-ip '172.20.0.10'", "--use-max-pods false"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}
	if nc.Spec.Kubelet.MaxPods == nil || *nc.Spec.Kubelet.MaxPods != 50 || len(nc.Spec.Kubelet.ClusterDNS) != 1 {
		t.Errorf("Resolve changed the class's kubelet: %+v", nc.Spec.Kubelet)
	}
	// Without clusterDNS on the class, the cluster's kube DNS address is used.
	nc.Spec.Kubelet.ClusterDNS = nil
	lts, err = NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lts[0].UserData, "--dns-cluster-ip '10.100.0.10'") {
		t.Errorf("user data lacks the kube DNS address:\n%s", lts[0].UserData)
	}
}

func TestResolveCustomPassesUserDataAndDoesNotSplitByMaxPods(t *testing.T) {
	custom := Get(awsv1.AMIFamilyCustom)
	nc := nodeClass(awsv1.AMIFamilyCustom, ami("ami-custom", "amd64", VariantStandard, custom))
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-custom"}}
	nc.Spec.UserData = ptr.To("#!/bin/bash\n/opt/my-bootstrap --taint karpenter.sh/unregistered:NoExecute\n")
	its := []*scheduling.InstanceType{
		instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29}),
		instanceType(itSpec{name: "m5.xlarge", arch: "amd64", pods: 58}),
	}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{"ami-custom efa=0 [m5.large,m5.xlarge]"})
	if lts[0].UserData != *nc.Spec.UserData {
		t.Errorf("Custom user data changed:\n%s", lts[0].UserData)
	}
}

func TestResolveGroupsByEFAOnlyWhenRequested(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023))
	its := []*scheduling.InstanceType{
		instanceType(itSpec{name: "c5n.18xlarge", arch: "amd64", pods: 737, efa: 1}),
		instanceType(itSpec{name: "c6in.32xlarge", arch: "amd64", pods: 737, efa: 2}),
		instanceType(itSpec{name: "c7i.48xlarge", arch: "amd64", pods: 737, efa: 1}),
	}
	claim := nodeClaim()
	lts, err := NewResolver().Resolve(nc, claim, its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "without an EFA request", summary(lts), []string{"ami-x86 efa=0 [c5n.18xlarge,c6in.32xlarge,c7i.48xlarge]"})

	claim.Spec.Resources.Requests = corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1")}
	lts, err = NewResolver().Resolve(nc, claim, its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "with an EFA request", summary(lts), []string{
		"ami-x86 efa=1 [c5n.18xlarge,c7i.48xlarge]",
		"ami-x86 efa=2 [c6in.32xlarge]",
	})
}

func TestResolveLabelsAndTaints(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023))
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})}
	opts := launchOptions()
	opts.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}} // also on the claim
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeSpot, opts)
	if err != nil {
		t.Fatal(err)
	}
	lt := lts[0]
	wantLabels := map[string]string{
		v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: "spot", "team": "payments", "karpenter.k8s.aws/instance-family": "m5",
	}
	if len(lt.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want %v (kubernetes.io, k8s.io and node-restriction.kubernetes.io keys dropped)", lt.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if lt.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, lt.Labels[k], v)
		}
	}
	var taints []string
	for _, tn := range lt.Taints {
		taints = append(taints, tn.ToString())
	}
	equal(t, "taints", taints, []string{"dedicated=db:NoSchedule", "cni.example.com/not-ready:NoSchedule", "karpenter.sh/unregistered:NoExecute"})
	for _, want := range []string{
		`--node-labels="karpenter.k8s.aws/instance-family=m5,karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=payments"`,
		`--register-with-taints="dedicated=db:NoSchedule,cni.example.com/not-ready:NoSchedule,karpenter.sh/unregistered:NoExecute"`,
	} {
		if !strings.Contains(lt.UserData, want) {
			t.Errorf("user data lacks %s:\n%s", want, lt.UserData)
		}
	}
	// The claim already carrying the unregistered taint does not double it.
	claim := nodeClaim()
	claim.Spec.Taints = append(claim.Spec.Taints, v1.UnregisteredNoExecuteTaint)
	if got := NodeTaints(nil, claim); len(got) != 3 {
		t.Errorf("taints %v, want 3 without a duplicate unregistered taint", got)
	}
}

func TestResolveFillsOptionsFromStatus(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023))
	nc.Spec.DetailedMonitoring = ptr.To(true)
	nc.Spec.AssociatePublicIPAddress = ptr.To(false)
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})}
	lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	lt := lts[0]
	if lt.InstanceProfile != "profile-default" || strings.Join(lt.SecurityGroupIDs, ",") != "sg-1,sg-2" || lt.NodeClassName != "default" {
		t.Errorf("options not filled from status: profile %q, security groups %v, class %q", lt.InstanceProfile, lt.SecurityGroupIDs, lt.NodeClassName)
	}
	if !lt.DetailedMonitoring || lt.AssociatePublicIPAddress == nil || *lt.AssociatePublicIPAddress || lt.CapacityType != v1.CapacityTypeOnDemand {
		t.Errorf("class fields not carried: monitoring %v, public IP %v, capacity type %q", lt.DetailedMonitoring, lt.AssociatePublicIPAddress, lt.CapacityType)
	}
}

func TestBlockDeviceMappingDefaultsPerFamily(t *testing.T) {
	cases := map[string][]string{
		awsv1.AMIFamilyAL2:          {"/dev/xvda 20Gi gp3 true"},
		awsv1.AMIFamilyAL2023:       {"/dev/xvda 20Gi gp3 true"},
		awsv1.AMIFamilyBottlerocket: {"/dev/xvda 4Gi gp3 true", "/dev/xvdb 20Gi gp3 true"},
		awsv1.AMIFamilyWindows2019:  {"/dev/sda1 50Gi gp3 true"},
		awsv1.AMIFamilyWindows2022:  {"/dev/sda1 50Gi gp3 true"},
		awsv1.AMIFamilyWindows2025:  {"/dev/sda1 50Gi gp3 true"},
		awsv1.AMIFamilyCustom:       {"/dev/xvda 20Gi gp3 true"},
	}
	describe := func(ms []*awsv1.BlockDeviceMapping) []string {
		var out []string
		for _, m := range ms {
			out = append(out, *m.DeviceName+" "+m.EBS.VolumeSize.String()+" "+*m.EBS.VolumeType+" "+map[bool]string{true: "true", false: "false"}[*m.EBS.Encrypted])
		}
		return out
	}
	for family, want := range cases {
		nc := nodeClass(family)
		got := BlockDeviceMappings(nc, Get(family))
		equal(t, family, describe(got), want)
		// A copy: changing it leaves the family's defaults alone.
		q := resource.MustParse("1Gi")
		got[0].EBS.VolumeSize = &q
		equal(t, family+" after changing the copy", describe(BlockDeviceMappings(nc, Get(family))), want)
	}
	nc := nodeClass(awsv1.AMIFamilyBottlerocket)
	size := resource.MustParse("100Gi")
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: &size, VolumeType: ptr.To("gp2"), Encrypted: ptr.To(false)}}}
	equal(t, "class mappings", describe(BlockDeviceMappings(nc, Get(awsv1.AMIFamilyBottlerocket))), []string{"/dev/xvdb 100Gi gp2 false"})
}

func TestMetadataOptionsDefaults(t *testing.T) {
	describe := func(m *awsv1.MetadataOptions) string {
		return *m.HTTPEndpoint + " " + *m.HTTPProtocolIPv6 + " " + itoa(int(*m.HTTPPutResponseHopLimit)) + " " + *m.HTTPTokens
	}
	if got := describe(MetadataOptions(nil, "10.100.0.10")); got != "enabled disabled 1 required" {
		t.Errorf("defaults %q, want enabled disabled 1 required", got)
	}
	if got := describe(MetadataOptions(nil, "fd01:ab::a")); got != "enabled enabled 1 required" {
		t.Errorf("IPv6 cluster defaults %q, want the IPv6 endpoint enabled", got)
	}
	class := &awsv1.MetadataOptions{HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("optional")}
	if got := describe(MetadataOptions(class, "")); got != "enabled disabled 2 optional" {
		t.Errorf("class values %q, want enabled disabled 2 optional", got)
	}
	if class.HTTPEndpoint != nil {
		t.Error("MetadataOptions changed the class's value")
	}
}

func TestResolveErrorsNameTheProblem(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "g4dn.xlarge", arch: "amd64", gpus: 1, pods: 29})}
	cases := []struct {
		name string
		nc   *awsv1.EC2NodeClass
		opts LaunchOptions
		want []string
	}{
		{"no AMIs", nodeClass(awsv1.AMIFamilyAL2023), launchOptions(), []string{`EC2NodeClass "default"`, "status.amis"}},
		{"no compatible AMI", nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023), ami("ami-arm-nvidia", "arm64", VariantNvidia, al2023)), launchOptions(),
			[]string{`EC2NodeClass "default"`, "g4dn.xlarge", "ami-x86", "ami-arm-nvidia", "karpenter.k8s.aws/instance-gpu-count", "kubernetes.io/arch"}},
		{"no cluster CIDR", nodeClass(awsv1.AMIFamilyAL2023, ami("ami-nvidia", "amd64", VariantNvidia, al2023)), func() LaunchOptions { o := launchOptions(); o.ClusterCIDR = ""; return o }(),
			[]string{`EC2NodeClass "default"`, "AL2023", "CIDR"}},
		{"no cluster endpoint", nodeClass(awsv1.AMIFamilyAL2023, ami("ami-nvidia", "amd64", VariantNvidia, al2023)), func() LaunchOptions { o := launchOptions(); o.ClusterEndpoint = ""; return o }(),
			[]string{`EC2NodeClass "default"`, "CLUSTER_ENDPOINT"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewResolver().Resolve(c.nc, nodeClaim(), its, v1.CapacityTypeOnDemand, c.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("user data too large", func(t *testing.T) {
		nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-nvidia", "amd64", VariantNvidia, al2023))
		nc.Spec.UserData = ptr.To("#!/bin/bash\n" + strings.Repeat("# padding\n", 1700))
		_, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
		if err == nil || !strings.Contains(err.Error(), "16384") || !strings.Contains(err.Error(), "spec.userData") {
			t.Fatalf("error %v, want one naming the 16384-byte limit and spec.userData", err)
		}
	})
	t.Run("bad user data", func(t *testing.T) {
		nc := nodeClass(awsv1.AMIFamilyBottlerocket, ami("ami-br", "amd64", VariantNvidia, Get(awsv1.AMIFamilyBottlerocket)))
		nc.Spec.UserData = ptr.To("[settings.kubernetes\nbroken")
		_, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
		if err == nil || !strings.Contains(err.Error(), "spec.userData") || !strings.Contains(err.Error(), `"default"`) {
			t.Fatalf("error %v, want one naming the class and spec.userData", err)
		}
	})
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("differs from %s (run go test -update after checking the change):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestResolveOneTemplatePerReservation(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023))
	reserved := func(zone, id, typ string, available bool) scheduling.Offering {
		return scheduling.Offering{Zone: zone, CapacityType: v1.CapacityTypeReserved, Available: available, Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone),
			scheduling.NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, id),
			scheduling.NewRequirement(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, typ),
		)}
	}
	m5 := instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})
	m5.Offerings = []scheduling.Offering{
		{Zone: "us-west-2a", CapacityType: v1.CapacityTypeOnDemand, Available: true},
		reserved("us-west-2a", "cr-b", "default", true),
		reserved("us-west-2b", "cr-a", "capacity-block", true),
		reserved("us-west-2c", "cr-gone", "default", false),
	}
	describe := func(lts []*LaunchTemplate) []string {
		var out []string
		for _, lt := range lts {
			out = append(out, lt.CapacityType+" "+lt.CapacityReservationID+" "+string(lt.CapacityReservationType))
		}
		return out
	}
	resolve := func(claim *v1.NodeClaim, capacityType string) []string {
		t.Helper()
		lts, err := NewResolver().Resolve(nc, claim, []*scheduling.InstanceType{m5}, capacityType, launchOptions())
		if err != nil {
			t.Fatal(err)
		}
		return describe(lts)
	}
	equal(t, "reserved", resolve(nodeClaim(), v1.CapacityTypeReserved), []string{"reserved cr-a capacity-block", "reserved cr-b default"})
	equal(t, "on-demand", resolve(nodeClaim(), v1.CapacityTypeOnDemand), []string{"on-demand  "})

	claim := nodeClaim()
	claim.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}}}
	equal(t, "reserved in us-west-2a only", resolve(claim, v1.CapacityTypeReserved), []string{"reserved cr-b default"})
}

// ipPrefixCount is handed to the template as IPv4 prefixes, or IPv6 ones in
// an IPv6 cluster; the launch options of the class go along unchanged.
func TestResolveIPPrefixCountAndLaunchOptions(t *testing.T) {
	al2023 := Get(awsv1.AMIFamilyAL2023)
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, al2023))
	nc.Spec.IPPrefixCount = ptr.To[int32](2)
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](40)}
	its := []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})}
	for _, c := range []struct {
		dns  string
		ipv6 bool
	}{{"10.100.0.10", false}, {"fd00:10:96::a", true}} {
		opts := launchOptions()
		opts.KubeDNSIP = c.dns
		lts, err := NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, opts)
		if err != nil {
			t.Fatal(err)
		}
		lt := lts[0]
		if lt.IPPrefixCount == nil || *lt.IPPrefixCount != 2 || lt.IPv6Prefixes != c.ipv6 {
			t.Errorf("kube DNS %s: prefixes %v ipv6 %t, want 2 ipv6 %t", c.dns, lt.IPPrefixCount, lt.IPv6Prefixes, c.ipv6)
		}
		if lt.ConnectionTracking == nil || *lt.ConnectionTracking.UDPTimeout != 40 {
			t.Errorf("connection tracking %+v", lt.ConnectionTracking)
		}
	}
}
