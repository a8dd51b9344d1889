package convert_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// gen builds random EC2NodeClasses that are valid for their version's schema,
// in the shape the API server hands to a conversion webhook: absent lists and
// maps are nil (never empty), quantities are canonical.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) coin() bool              { return g.r.IntN(2) == 0 }
func (g *gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }
func (g *gen) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 1+g.r.IntN(10))
	for i := range b {
		b[i] = letters[g.r.IntN(len(letters))]
	}
	return string(b)
}
func (g *gen) optString() *string {
	if g.coin() {
		return nil
	}
	return ptr.To(g.word())
}
func (g *gen) optBool() *bool {
	if g.coin() {
		return nil
	}
	return ptr.To(g.coin())
}
func (g *gen) optInt64(lo, hi int64) *int64 {
	if g.coin() {
		return nil
	}
	return ptr.To(lo + g.r.Int64N(hi-lo+1))
}
func (g *gen) optInt32(lo, hi int32) *int32 {
	if g.coin() {
		return nil
	}
	return ptr.To(lo + g.r.Int32N(hi-lo+1))
}

// stringMap returns nil or a map with 1..max entries.
func (g *gen) stringMap(max int, key func() string) map[string]string {
	if g.coin() {
		return nil
	}
	m := map[string]string{}
	for n := 1 + g.r.IntN(max); len(m) < n; {
		m[key()] = g.word()
	}
	return m
}

func (g *gen) tagKey() string {
	return g.pick("karpenter.sh/discovery", "Name", "team", "env", "app.kubernetes.io/name") + "-" + g.word()
}

func (g *gen) meta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:              g.word(),
		UID:               types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", g.r.Uint32(), g.r.Uint64()&0xffffffffffff)),
		ResourceVersion:   fmt.Sprint(g.r.IntN(100000)),
		Generation:        g.r.Int64N(50),
		CreationTimestamp: metav1.NewTime(time.Unix(1700000000+g.r.Int64N(1e7), 0).UTC()),
		Labels:            g.stringMap(3, g.word),
		Annotations:       g.stringMap(3, func() string { return "example.com/" + g.word() }),
	}
	if g.coin() {
		m.Finalizers = []string{awsv1.TerminationFinalizer}
	}
	return m
}

func (g *gen) conditions() []status.Condition {
	if g.coin() {
		return nil
	}
	var out []status.Condition
	for _, t := range []string{"Ready", "AMIsReady", "SubnetsReady", "SecurityGroupsReady", "InstanceProfileReady"} {
		if g.coin() {
			out = append(out, status.Condition{
				Type: t, Status: metav1.ConditionStatus(g.pick("True", "False", "Unknown")),
				ObservedGeneration: g.r.Int64N(50), Reason: "R" + g.word(), Message: g.word(),
				LastTransitionTime: metav1.NewTime(time.Unix(1700000000+g.r.Int64N(1e7), 0).UTC()),
			})
		}
	}
	return out
}

func (g *gen) requirements() []corev1.NodeSelectorRequirement {
	if g.coin() {
		return nil
	}
	out := []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{g.pick("amd64", "arm64")}}}
	if g.coin() {
		out = append(out, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOperator(g.pick("Exists", "DoesNotExist"))})
	}
	return out
}

func (g *gen) volumeSize() *resource.Quantity {
	if g.coin() {
		return nil
	}
	// The v1 schema's pattern (upstream's) takes single-digit T and Ti
	// sizes but not every two-digit one (e.g. not 28Ti).
	unit := g.pick("Gi", "G", "Ti", "T")
	n := 1 + g.r.IntN(50)
	if unit == "Ti" || unit == "T" {
		n = 1 + g.r.IntN(9)
	}
	q := resource.MustParse(fmt.Sprintf("%d%s", n, unit))
	return &q
}

// Fields shared by both versions are generated once, as v1 values, and
// copied into v1beta1 by the v1beta1 generator.

func (g *gen) subnetTerms() []awsv1.SubnetSelectorTerm {
	out := make([]awsv1.SubnetSelectorTerm, 1+g.r.IntN(3))
	for i := range out {
		if g.coin() {
			out[i].ID = "subnet-" + g.word()
		} else {
			out[i].Tags = g.nonEmptyTags()
		}
	}
	return out
}

func (g *gen) nonEmptyTags() map[string]string {
	m := map[string]string{}
	for n := 1 + g.r.IntN(3); len(m) < n; {
		m[g.tagKey()] = g.pick("*", g.word())
	}
	return m
}

func (g *gen) securityGroupTerms() []awsv1.SecurityGroupSelectorTerm {
	out := make([]awsv1.SecurityGroupSelectorTerm, 1+g.r.IntN(3))
	for i := range out {
		switch g.r.IntN(3) {
		case 0:
			out[i].ID = "sg-" + g.word()
		case 1:
			out[i].Name = g.word()
		default:
			out[i].Tags = g.nonEmptyTags()
		}
	}
	return out
}

// nonAliasAMITerms returns 1..4 terms that are either an id alone, an
// ssmParameter alone (v1 only, when ssm is set) or any non-empty mix of tags,
// name and owner.
func (g *gen) nonAliasAMITerms(ssm bool) []awsv1.AMISelectorTerm {
	out := make([]awsv1.AMISelectorTerm, 1+g.r.IntN(4))
	for i := range out {
		if g.r.IntN(3) == 0 {
			out[i].ID = "ami-" + g.word()
			continue
		}
		if ssm && g.r.IntN(3) == 0 {
			out[i].SSMParameter = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/" + g.word() + "/image_id"
			continue
		}
		for out[i].Tags == nil && out[i].Name == "" {
			if g.coin() {
				out[i].Tags = g.nonEmptyTags()
			}
			if g.coin() {
				out[i].Name = "amazon-eks-node-" + g.word() + "-*"
			}
		}
		if g.coin() {
			out[i].Owner = g.pick("amazon", "self", "123456789012")
		}
	}
	return out
}

func (g *gen) blockDeviceMappings() []*awsv1.BlockDeviceMapping {
	if g.coin() {
		return nil
	}
	out := make([]*awsv1.BlockDeviceMapping, 1+g.r.IntN(3))
	root := g.r.IntN(len(out) + 1) // at most one root volume
	for i := range out {
		m := &awsv1.BlockDeviceMapping{DeviceName: ptr.To(g.pick("/dev/xvda", "/dev/xvdb", "/dev/sda1", "/dev/xvdc")), RootVolume: i == root}
		if g.r.IntN(5) == 0 {
			m.DeviceName = nil
		}
		if g.r.IntN(5) != 0 {
			m.EBS = &awsv1.BlockDevice{
				DeleteOnTermination: g.optBool(),
				Encrypted:           g.optBool(),
				IOPS:                g.optInt64(3000, 16000),
				KMSKeyID:            g.optString(),
				SnapshotID:          g.optString(),
				Throughput:          g.optInt64(125, 1000),
				VolumeSize:          g.volumeSize(),
			}
			if m.EBS.SnapshotID == nil && m.EBS.VolumeSize == nil {
				m.EBS.VolumeSize = ptr.To(resource.MustParse("20Gi"))
			}
			if g.coin() {
				m.EBS.VolumeType = ptr.To(g.pick("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"))
			}
		}
		out[i] = m
	}
	return out
}

func (g *gen) metadataOptions() *awsv1.MetadataOptions {
	if g.r.IntN(4) == 0 {
		return nil
	}
	mo := &awsv1.MetadataOptions{HTTPPutResponseHopLimit: g.optInt64(1, 64)}
	if g.coin() {
		mo.HTTPEndpoint = ptr.To(g.pick("enabled", "disabled"))
	}
	if g.coin() {
		mo.HTTPProtocolIPv6 = ptr.To(g.pick("enabled", "disabled"))
	}
	if g.coin() {
		mo.HTTPTokens = ptr.To(g.pick("required", "optional"))
	}
	return mo
}

func (g *gen) kubelet() *awsv1.KubeletConfiguration {
	if g.coin() {
		return nil
	}
	signals := []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
	reserved := func() string { return g.pick("cpu", "memory", "ephemeral-storage", "pid") }
	k := &awsv1.KubeletConfiguration{
		MaxPods:                   g.optInt32(0, 737),
		PodsPerCore:               g.optInt32(0, 10),
		SystemReserved:            g.stringMap(4, reserved),
		KubeReserved:              g.stringMap(4, reserved),
		EvictionHard:              g.stringMap(6, func() string { return g.pick(signals...) }),
		EvictionMaxPodGracePeriod: g.optInt32(0, 600),
		CPUCFSQuota:               g.optBool(),
	}
	if g.coin() {
		k.ClusterDNS = []string{fmt.Sprintf("10.%d.0.10", g.r.IntN(256))}
	}
	if g.coin() {
		low := g.r.Int32N(90)
		k.ImageGCLowThresholdPercent = ptr.To(low)
		k.ImageGCHighThresholdPercent = ptr.To(low + 1 + g.r.Int32N(100-low))
	}
	if soft := g.stringMap(6, func() string { return g.pick(signals...) }); soft != nil {
		k.EvictionSoft = soft
		k.EvictionSoftGracePeriod = map[string]metav1.Duration{}
		for key := range soft {
			k.EvictionSoftGracePeriod[key] = metav1.Duration{Duration: time.Duration(1+g.r.IntN(600)) * time.Second}
		}
	}
	return k
}

func (g *gen) status() awsv1.EC2NodeClassStatus {
	st := awsv1.EC2NodeClassStatus{Conditions: g.conditions()}
	if g.coin() {
		st.InstanceProfile = g.word()
	}
	if g.coin() {
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			sn := awsv1.Subnet{ID: "subnet-" + g.word(), Zone: "us-west-2" + g.pick("a", "b", "c")}
			if g.coin() {
				sn.ZoneID = "usw2-az" + g.pick("1", "2", "3")
			}
			st.Subnets = append(st.Subnets, sn)
		}
	}
	if g.coin() {
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			st.SecurityGroups = append(st.SecurityGroups, awsv1.SecurityGroup{ID: "sg-" + g.word(), Name: g.word()})
		}
	}
	if g.coin() {
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			st.AMIs = append(st.AMIs, awsv1.AMI{ID: "ami-" + g.word(), Name: g.word(), Requirements: g.requirements(), Deprecated: g.coin()})
		}
	}
	return st
}

// roleOrProfile sets exactly one of role and instanceProfile.
func (g *gen) roleOrProfile() (string, *string) {
	if g.coin() {
		return "KarpenterNodeRole-" + g.word(), nil
	}
	return "", ptr.To("KarpenterNodeInstanceProfile-" + g.word())
}

// V1 returns a random valid v1 EC2NodeClass.
func (g *gen) V1() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass"},
		ObjectMeta: g.meta(),
		Status:     g.status(),
	}
	s := &nc.Spec
	s.SubnetSelectorTerms = g.subnetTerms()
	s.SecurityGroupSelectorTerms = g.securityGroupTerms()
	s.Role, s.InstanceProfile = g.roleOrProfile()
	if g.coin() {
		// An alias is the only term; amiFamily is optional and, when set,
		// is Custom or the alias's own family.
		family := g.pick("al2", "al2023", "bottlerocket", "windows2019", "windows2022")
		version := awsv1.AliasVersionLatest
		if family[0] != 'w' && g.coin() {
			version = g.pick("v20240625", "v20240807", "v1.20.3")
		}
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: family + "@" + version}}
		switch g.r.IntN(3) {
		case 0:
			s.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
		case 1:
			s.AMIFamily = ptr.To(awsv1.AMIFamilyForAlias(family))
		}
	} else {
		s.AMISelectorTerms = g.nonAliasAMITerms(true)
		s.AMIFamily = ptr.To(g.pick(awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyCustom))
	}
	s.AssociatePublicIPAddress = g.optBool()
	s.UserData = g.optString()
	s.Tags = g.stringMap(4, g.tagKey)
	s.Kubelet = g.kubelet()
	s.BlockDeviceMappings = g.blockDeviceMappings()
	if g.coin() {
		s.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
	}
	s.DetailedMonitoring = g.optBool()
	s.MetadataOptions = g.metadataOptions()
	s.Context = g.optString()
	g.v1OnlyFields(s)
	return nc
}

// v1OnlyFields sets, now and then, the v1 fields v1beta1 has no field for.
func (g *gen) v1OnlyFields(s *awsv1.EC2NodeClassSpec) {
	if g.r.IntN(4) != 0 {
		return
	}
	if g.coin() {
		s.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123"}, {Tags: map[string]string{"team": "ml"}, InstanceMatchCriteria: "open"}}
	}
	if g.coin() {
		s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("pg-" + g.word())}
	}
	if g.coin() {
		s.IPPrefixCount = ptr.To(int32(g.r.IntN(4)))
	}
	if g.coin() {
		s.NetworkInterfaces = []*awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
	}
	if g.coin() {
		s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: g.coin()}
	}
	if g.coin() {
		s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To(int32(60 + g.r.IntN(1000))), UDPTimeout: ptr.To(int32(30))}
	}
	if g.coin() {
		s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To(g.pick("enabled", "disabled"))}
	}
	for _, m := range s.BlockDeviceMappings {
		if m != nil && m.EBS != nil && m.EBS.SnapshotID != nil && *m.EBS.SnapshotID != "" && g.coin() {
			m.EBS.VolumeInitializationRate = ptr.To(int32(100 + g.r.IntN(201)))
		}
	}
}

// V1beta1 returns a random valid v1beta1 EC2NodeClass, including Ubuntu
// classes and classes carrying a pinned alias version from an earlier v1
// round trip.
func (g *gen) V1beta1() *awsv1beta1.EC2NodeClass {
	// Generate the shared fields through the v1 generator and copy them
	// field by field (not through the converter under test).
	src := g.V1()
	nc := &awsv1beta1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1beta1", Kind: "EC2NodeClass"},
		ObjectMeta: src.ObjectMeta,
	}
	s, v := &nc.Spec, &src.Spec
	for _, t := range v.SubnetSelectorTerms {
		s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, awsv1beta1.SubnetSelectorTerm{Tags: t.Tags, ID: t.ID})
	}
	for _, t := range v.SecurityGroupSelectorTerms {
		s.SecurityGroupSelectorTerms = append(s.SecurityGroupSelectorTerms, awsv1beta1.SecurityGroupSelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name})
	}
	s.AMIFamily = ptr.To(g.pick(awsv1beta1.AMIFamilyAL2, awsv1beta1.AMIFamilyAL2023, awsv1beta1.AMIFamilyBottlerocket, awsv1beta1.AMIFamilyUbuntu, awsv1beta1.AMIFamilyWindows2019, awsv1beta1.AMIFamilyWindows2022, awsv1beta1.AMIFamilyCustom))
	if g.coin() || *s.AMIFamily == awsv1beta1.AMIFamilyCustom {
		for _, t := range g.nonAliasAMITerms(false) {
			s.AMISelectorTerms = append(s.AMISelectorTerms, awsv1beta1.AMISelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner})
		}
	} else if !strings.HasPrefix(*s.AMIFamily, "Windows") && *s.AMIFamily != awsv1beta1.AMIFamilyUbuntu && g.r.IntN(4) == 0 {
		// Only a v1 object with a pinned alias leaves this annotation, and
		// Windows aliases cannot be pinned.
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[awsv1.AnnotationAliasVersionCompatibilityKey] = "v20240625"
	}
	s.Role, s.InstanceProfile = v.Role, v.InstanceProfile
	s.AssociatePublicIPAddress = v.AssociatePublicIPAddress
	s.UserData = v.UserData
	s.Tags = v.Tags
	for _, m := range v.BlockDeviceMappings {
		bdm := &awsv1beta1.BlockDeviceMapping{DeviceName: m.DeviceName, RootVolume: m.RootVolume}
		if e := m.EBS; e != nil {
			bdm.EBS = &awsv1beta1.BlockDevice{DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, IOPS: e.IOPS, KMSKeyID: e.KMSKeyID, SnapshotID: e.SnapshotID, Throughput: e.Throughput, VolumeSize: e.VolumeSize, VolumeType: e.VolumeType}
		}
		s.BlockDeviceMappings = append(s.BlockDeviceMappings, bdm)
	}
	if v.InstanceStorePolicy != nil {
		s.InstanceStorePolicy = ptr.To(awsv1beta1.InstanceStorePolicyRAID0)
	}
	s.DetailedMonitoring = v.DetailedMonitoring
	if mo := v.MetadataOptions; mo != nil {
		s.MetadataOptions = &awsv1beta1.MetadataOptions{HTTPEndpoint: mo.HTTPEndpoint, HTTPProtocolIPv6: mo.HTTPProtocolIPv6, HTTPPutResponseHopLimit: mo.HTTPPutResponseHopLimit, HTTPTokens: mo.HTTPTokens}
	}
	s.Context = v.Context
	st := &src.Status
	nc.Status = awsv1beta1.EC2NodeClassStatus{InstanceProfile: st.InstanceProfile, Conditions: st.Conditions}
	for _, sn := range st.Subnets {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1beta1.Subnet{ID: sn.ID, Zone: sn.Zone, ZoneID: sn.ZoneID})
	}
	for _, sg := range st.SecurityGroups {
		nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, awsv1beta1.SecurityGroup{ID: sg.ID, Name: sg.Name})
	}
	for _, a := range st.AMIs {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1beta1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements, Deprecated: a.Deprecated})
	}
	return nc
}
