package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// UbuntuPlaceholderAMIID is the AMI id written into a v1 EC2NodeClass that
// was converted from a v1beta1 Ubuntu class without amiSelectorTerms. v1 has
// no way to select Ubuntu AMIs by family, so the class is marked incompatible
// (see awsv1.AnnotationUbuntuCompatibilityKey) and this id keeps it valid.
const UbuntuPlaceholderAMIID = "ami-placeholder"

// ubuntuDefaultRootVolume is the root volume v1beta1 used for Ubuntu. v1 maps
// Ubuntu to AL2, whose default root device is /dev/xvda, so the Ubuntu
// default is written out explicitly to keep existing nodes undrifted.
func ubuntuDefaultRootVolume() []*awsv1.BlockDeviceMapping {
	return []*awsv1.BlockDeviceMapping{{
		DeviceName: ptr.To("/dev/sda1"),
		RootVolume: true,
		EBS: &awsv1.BlockDevice{
			Encrypted:  ptr.To(true),
			VolumeType: ptr.To("gp3"),
			VolumeSize: ptr.To(resource.MustParse("20Gi")),
		},
	}}
}

// EC2NodeClassV1beta1ToV1 converts a v1beta1 EC2NodeClass to v1. It is pure:
// the input is not modified and nothing outside the object is consulted.
//
// The rules that are not a 1:1 copy:
//   - amiFamily AL2, AL2023, Bottlerocket, Windows2019 or Windows2022 without
//     amiSelectorTerms becomes amiSelectorTerms [{alias: <family>@latest}] with
//     no amiFamily (the version comes from the v1-alias-version annotation
//     when a v1 object carried a pinned alias through v1beta1).
//   - amiFamily Ubuntu, which v1 dropped, becomes AL2 (same bootstrap) and the
//     v1beta1-ubuntu annotation records what else changed so that the reverse
//     conversion can restore it.
//   - any other amiFamily becomes Custom.
//   - annotations that carried v1-only data (kubelet, alias, ssmParameter
//     terms) are turned back into fields and removed.
func EC2NodeClassV1beta1ToV1(in *awsv1beta1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	if in == nil {
		return nil, nil
	}
	out := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	annotations := out.Annotations
	pinnedAlias, hasPinnedAlias := popAnnotation(annotations, awsv1.AnnotationAliasCompatibilityKey)
	aliasVersion, _ := popAnnotation(annotations, awsv1.AnnotationAliasVersionCompatibilityKey)
	kubeletJSON, hasKubelet := popAnnotation(annotations, awsv1.AnnotationKubeletCompatibilityKey)
	ssmJSON, hasSSM := popAnnotation(annotations, awsv1.AnnotationSSMParameterCompatibilityKey)
	specJSON, hasSpec := popAnnotation(annotations, awsv1.AnnotationSpecCompatibilityKey)

	s := &in.Spec
	o := &out.Spec
	o.SubnetSelectorTerms = subnetTermsToV1(s.SubnetSelectorTerms)
	o.SecurityGroupSelectorTerms = securityGroupTermsToV1(s.SecurityGroupSelectorTerms)
	o.AssociatePublicIPAddress = CopyPtr(s.AssociatePublicIPAddress)
	o.UserData = CopyPtr(s.UserData)
	o.Role = s.Role
	o.InstanceProfile = CopyPtr(s.InstanceProfile)
	o.Tags = maps.Clone(s.Tags)
	o.BlockDeviceMappings = blockDeviceMappingsToV1(s.BlockDeviceMappings)
	if s.InstanceStorePolicy != nil {
		o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicy(*s.InstanceStorePolicy))
	}
	o.DetailedMonitoring = CopyPtr(s.DetailedMonitoring)
	if s.MetadataOptions != nil {
		o.MetadataOptions = &awsv1.MetadataOptions{
			HTTPEndpoint:            CopyPtr(s.MetadataOptions.HTTPEndpoint),
			HTTPProtocolIPv6:        CopyPtr(s.MetadataOptions.HTTPProtocolIPv6),
			HTTPPutResponseHopLimit: CopyPtr(s.MetadataOptions.HTTPPutResponseHopLimit),
			HTTPTokens:              CopyPtr(s.MetadataOptions.HTTPTokens),
		}
	}
	o.Context = CopyPtr(s.Context)
	if hasKubelet {
		kubelet := &awsv1.KubeletConfiguration{}
		if err := json.Unmarshal([]byte(kubeletJSON), kubelet); err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1: annotation %s is not a kubelet configuration: %w", in.Name, awsv1.AnnotationKubeletCompatibilityKey, err)
		}
		o.Kubelet = kubelet
	}
	if hasSpec {
		var only v1OnlySpec
		if err := json.Unmarshal([]byte(specJSON), &only); err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1: annotation %s is not a v1 spec: %w", in.Name, awsv1.AnnotationSpecCompatibilityKey, err)
		}
		only.applyTo(o)
	}

	family := ptr.Deref(s.AMIFamily, "")
	terms := amiTermsToV1(s.AMISelectorTerms)
	if hasSSM {
		var ssm []ssmParameterTerm
		if err := json.Unmarshal([]byte(ssmJSON), &ssm); err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1: annotation %s is not a list of ssmParameter terms: %w", in.Name, awsv1.AnnotationSSMParameterCompatibilityKey, err)
		}
		// Reinsert in ascending index order; each index is where the term
		// stood among the non-alias terms of the v1 object.
		for _, p := range ssm {
			i := min(max(p.Index, 0), len(terms))
			terms = slices.Insert(terms, i, awsv1.AMISelectorTerm{SSMParameter: p.SSMParameter})
		}
	}
	switch {
	case family == awsv1beta1.AMIFamilyUbuntu:
		// Ubuntu nodes bootstrap like AL2. What v1 cannot express is kept in
		// the annotation: the class is unusable without explicit AMIs.
		specifiers := []string{awsv1.AnnotationUbuntuCompatibilityAMIFamily}
		o.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
		if s.BlockDeviceMappings == nil {
			o.BlockDeviceMappings = ubuntuDefaultRootVolume()
			specifiers = append(specifiers, awsv1.AnnotationUbuntuCompatibilityBlockDeviceMappings)
		}
		if len(terms) == 0 {
			terms = []awsv1.AMISelectorTerm{{ID: UbuntuPlaceholderAMIID}}
			specifiers = append(specifiers, awsv1.AnnotationUbuntuCompatibilityIncompatible)
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[awsv1.AnnotationUbuntuCompatibilityKey] = strings.Join(specifiers, ",")
	case len(terms) == 0 && hasPinnedAlias && isAlias(pinnedAlias):
		// A v1 object with both amiFamily and an alias went through v1beta1.
		o.AMIFamily = CopyPtr(s.AMIFamily)
		terms = []awsv1.AMISelectorTerm{{Alias: pinnedAlias}}
	case len(terms) == 0 && slices.Contains(awsv1.AliasFamilies, family):
		// v1beta1 "latest AMI of this family" is exactly what an alias says.
		// Windows aliases only exist as @latest; a pinned version in the
		// annotation (which a v1 object cannot have produced) is ignored
		// rather than turned into an object v1 rejects.
		if aliasVersion == "" || strings.HasPrefix(family, "Windows") {
			aliasVersion = awsv1.AliasVersionLatest
		}
		terms = []awsv1.AMISelectorTerm{{Alias: awsv1.Alias{Family: strings.ToLower(family), Version: aliasVersion}.String()}}
	case slices.Contains(awsv1.AliasFamilies, family):
		o.AMIFamily = ptr.To(family)
	default:
		o.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
	}
	o.AMISelectorTerms = terms
	out.Annotations = nilIfEmpty(annotations)

	out.Status = awsv1.EC2NodeClassStatus{
		InstanceProfile: in.Status.InstanceProfile,
		Conditions:      copyConditions(in.Status.Conditions),
	}
	for _, sn := range in.Status.Subnets {
		out.Status.Subnets = append(out.Status.Subnets, awsv1.Subnet{ID: sn.ID, Zone: sn.Zone, ZoneID: sn.ZoneID})
	}
	for _, sg := range in.Status.SecurityGroups {
		out.Status.SecurityGroups = append(out.Status.SecurityGroups, awsv1.SecurityGroup{ID: sg.ID, Name: sg.Name})
	}
	for _, ami := range in.Status.AMIs {
		a := ami.DeepCopy()
		out.Status.AMIs = append(out.Status.AMIs, awsv1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements, Deprecated: a.Deprecated})
	}
	return out, nil
}

// EC2NodeClassV1ToV1beta1 converts a v1 EC2NodeClass to v1beta1. It is pure
// and the inverse of EC2NodeClassV1beta1ToV1: v1-only data that v1beta1 has
// no field for (kubelet, a pinned alias version, amiFamily beside an alias,
// ssmParameter terms)
// travels in compatibility annotations, so v1 -> v1beta1 -> v1 is lossless.
func EC2NodeClassV1ToV1beta1(in *awsv1.EC2NodeClass) (*awsv1beta1.EC2NodeClass, error) {
	if in == nil {
		return nil, nil
	}
	out := &awsv1beta1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1beta1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	annotations := out.Annotations
	ubuntu, isUbuntu := popAnnotation(annotations, awsv1.AnnotationUbuntuCompatibilityKey)
	// These are only ever written below; stale copies on a v1 object would
	// otherwise shadow what the v1 fields say now.
	popAnnotation(annotations, awsv1.AnnotationAliasCompatibilityKey)
	popAnnotation(annotations, awsv1.AnnotationAliasVersionCompatibilityKey)
	popAnnotation(annotations, awsv1.AnnotationKubeletCompatibilityKey)
	popAnnotation(annotations, awsv1.AnnotationSSMParameterCompatibilityKey)
	popAnnotation(annotations, awsv1.AnnotationSpecCompatibilityKey)
	setAnnotation := func(k, v string) {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}

	s := &in.Spec
	o := &out.Spec
	o.SubnetSelectorTerms = subnetTermsToV1beta1(s.SubnetSelectorTerms)
	o.SecurityGroupSelectorTerms = securityGroupTermsToV1beta1(s.SecurityGroupSelectorTerms)
	o.AssociatePublicIPAddress = CopyPtr(s.AssociatePublicIPAddress)
	o.UserData = CopyPtr(s.UserData)
	o.Role = s.Role
	o.InstanceProfile = CopyPtr(s.InstanceProfile)
	o.Tags = maps.Clone(s.Tags)
	o.BlockDeviceMappings = blockDeviceMappingsToV1beta1(s.BlockDeviceMappings)
	if s.InstanceStorePolicy != nil {
		o.InstanceStorePolicy = ptr.To(awsv1beta1.InstanceStorePolicy(*s.InstanceStorePolicy))
	}
	o.DetailedMonitoring = CopyPtr(s.DetailedMonitoring)
	if s.MetadataOptions != nil {
		o.MetadataOptions = &awsv1beta1.MetadataOptions{
			HTTPEndpoint:            CopyPtr(s.MetadataOptions.HTTPEndpoint),
			HTTPProtocolIPv6:        CopyPtr(s.MetadataOptions.HTTPProtocolIPv6),
			HTTPPutResponseHopLimit: CopyPtr(s.MetadataOptions.HTTPPutResponseHopLimit),
			HTTPTokens:              CopyPtr(s.MetadataOptions.HTTPTokens),
		}
	}
	o.Context = CopyPtr(s.Context)
	if s.Kubelet != nil {
		b, err := json.Marshal(s.Kubelet)
		if err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1beta1: encoding kubelet: %w", in.Name, err)
		}
		setAnnotation(awsv1.AnnotationKubeletCompatibilityKey, string(b))
	}
	if only := v1OnlySpecOf(s); only != nil {
		b, err := json.Marshal(only)
		if err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1beta1: encoding v1 spec fields: %w", in.Name, err)
		}
		setAnnotation(awsv1.AnnotationSpecCompatibilityKey, string(b))
	}

	// v1beta1 terms have neither alias nor ssmParameter: the alias maps to
	// amiFamily, ssmParameter terms travel in an annotation.
	nonAlias := make([]awsv1.AMISelectorTerm, 0, len(s.AMISelectorTerms))
	var ssm []ssmParameterTerm
	for _, t := range s.AMISelectorTerms {
		switch {
		case t.Alias != "":
		case t.SSMParameter != "":
			ssm = append(ssm, ssmParameterTerm{Index: len(nonAlias) + len(ssm), SSMParameter: t.SSMParameter})
		default:
			nonAlias = append(nonAlias, t)
		}
	}
	if isUbuntu {
		specifiers := strings.Split(ubuntu, ",")
		o.AMIFamily = ptr.To(awsv1beta1.AMIFamilyUbuntu)
		if slices.Contains(specifiers, awsv1.AnnotationUbuntuCompatibilityIncompatible) {
			nonAlias, ssm = nil, nil
		}
		if slices.Contains(specifiers, awsv1.AnnotationUbuntuCompatibilityBlockDeviceMappings) {
			o.BlockDeviceMappings = nil
		}
	} else {
		o.AMIFamily = ptr.To(in.AMIFamily())
		if alias := in.Alias(); alias != nil {
			// The reverse conversion rebuilds "<lower(amiFamily)>@<version>"
			// with no amiFamily; anything else needs the whole alias kept.
			rebuilt := s.AMIFamily == nil && strings.ToLower(*o.AMIFamily) == alias.Family && len(nonAlias) == 0 && len(ssm) == 0
			switch {
			case !rebuilt:
				setAnnotation(awsv1.AnnotationAliasCompatibilityKey, alias.String())
			case alias.Version != awsv1.AliasVersionLatest:
				setAnnotation(awsv1.AnnotationAliasVersionCompatibilityKey, alias.Version)
			}
		}
	}
	o.AMISelectorTerms = amiTermsToV1beta1(nonAlias)
	if len(ssm) != 0 {
		b, err := json.Marshal(ssm)
		if err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1beta1: encoding ssmParameter terms: %w", in.Name, err)
		}
		setAnnotation(awsv1.AnnotationSSMParameterCompatibilityKey, string(b))
	}
	out.Annotations = nilIfEmpty(annotations)

	out.Status = awsv1beta1.EC2NodeClassStatus{
		InstanceProfile: in.Status.InstanceProfile,
		Conditions:      copyConditions(in.Status.Conditions),
	}
	for _, sn := range in.Status.Subnets {
		out.Status.Subnets = append(out.Status.Subnets, awsv1beta1.Subnet{ID: sn.ID, Zone: sn.Zone, ZoneID: sn.ZoneID})
	}
	for _, sg := range in.Status.SecurityGroups {
		out.Status.SecurityGroups = append(out.Status.SecurityGroups, awsv1beta1.SecurityGroup{ID: sg.ID, Name: sg.Name})
	}
	for _, ami := range in.Status.AMIs {
		a := ami.DeepCopy()
		out.Status.AMIs = append(out.Status.AMIs, awsv1beta1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements, Deprecated: a.Deprecated})
	}
	return out, nil
}

// v1OnlySpec holds the v1 spec fields v1beta1 has no field for.
type v1OnlySpec struct {
	CapacityReservationSelectorTerms []awsv1.CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	PlacementGroupSelector           *awsv1.PlacementGroupSelector           `json:"placementGroupSelector,omitempty"`
	IPPrefixCount                    *int32                                  `json:"ipPrefixCount,omitempty"`
	NetworkInterfaces                []*awsv1.NetworkInterface               `json:"networkInterfaces,omitempty"`
	EnclaveOptions                   *awsv1.EnclaveOptions                   `json:"enclaveOptions,omitempty"`
	ConnectionTracking               *awsv1.ConnectionTracking               `json:"connectionTracking,omitempty"`
	CPUOptions                       *awsv1.CPUOptions                       `json:"cpuOptions,omitempty"`
	// VolumeInitializationRates maps a blockDeviceMappings index to its
	// ebs.volumeInitializationRate.
	VolumeInitializationRates map[int]int32 `json:"volumeInitializationRates,omitempty"`
}

// v1OnlySpecOf returns the v1-only fields of s, nil when none is set.
func v1OnlySpecOf(s *awsv1.EC2NodeClassSpec) *v1OnlySpec {
	c := s.DeepCopy()
	only := &v1OnlySpec{
		CapacityReservationSelectorTerms: c.CapacityReservationSelectorTerms,
		PlacementGroupSelector:           c.PlacementGroupSelector,
		IPPrefixCount:                    c.IPPrefixCount,
		NetworkInterfaces:                c.NetworkInterfaces,
		EnclaveOptions:                   c.EnclaveOptions,
		ConnectionTracking:               c.ConnectionTracking,
		CPUOptions:                       c.CPUOptions,
	}
	for i, m := range c.BlockDeviceMappings {
		if m != nil && m.EBS != nil && m.EBS.VolumeInitializationRate != nil {
			if only.VolumeInitializationRates == nil {
				only.VolumeInitializationRates = map[int]int32{}
			}
			only.VolumeInitializationRates[i] = *m.EBS.VolumeInitializationRate
		}
	}
	if only.CapacityReservationSelectorTerms == nil && only.PlacementGroupSelector == nil && only.IPPrefixCount == nil &&
		only.NetworkInterfaces == nil && only.EnclaveOptions == nil && only.ConnectionTracking == nil && only.CPUOptions == nil &&
		only.VolumeInitializationRates == nil {
		return nil
	}
	return only
}

// applyTo writes the fields back into a v1 spec.
func (only *v1OnlySpec) applyTo(o *awsv1.EC2NodeClassSpec) {
	o.CapacityReservationSelectorTerms = only.CapacityReservationSelectorTerms
	o.PlacementGroupSelector = only.PlacementGroupSelector
	o.IPPrefixCount = only.IPPrefixCount
	o.NetworkInterfaces = only.NetworkInterfaces
	o.EnclaveOptions = only.EnclaveOptions
	o.ConnectionTracking = only.ConnectionTracking
	o.CPUOptions = only.CPUOptions
	for i, rate := range only.VolumeInitializationRates {
		if i >= 0 && i < len(o.BlockDeviceMappings) && o.BlockDeviceMappings[i] != nil && o.BlockDeviceMappings[i].EBS != nil {
			o.BlockDeviceMappings[i].EBS.VolumeInitializationRate = ptr.To(rate)
		}
	}
}

// ssmParameterTerm is a v1 amiSelectorTerms entry that selects by SSM
// parameter, with its position among the non-alias terms.
type ssmParameterTerm struct {
	Index        int    `json:"index"`
	SSMParameter string `json:"ssmParameter"`
}

func isAlias(s string) bool {
	_, ok := awsv1.ParseAlias(s)
	return ok
}

// convertList converts a list (of selector terms, block device mappings)
// item by item; a nil list stays nil, so "absent" survives a round trip.
func convertList[In, Out any](in []In, convert func(In) Out) []Out {
	if in == nil {
		return nil
	}
	out := make([]Out, 0, len(in))
	for _, t := range in {
		out = append(out, convert(t))
	}
	return out
}

// Subnet and security group terms have the same fields in v1 and v1beta1:
// a struct conversion plus a copy of the tags.
func subnetTermsToV1(in []awsv1beta1.SubnetSelectorTerm) []awsv1.SubnetSelectorTerm {
	return convertList(in, func(t awsv1beta1.SubnetSelectorTerm) awsv1.SubnetSelectorTerm {
		t.Tags = maps.Clone(t.Tags)
		return awsv1.SubnetSelectorTerm(t)
	})
}

func subnetTermsToV1beta1(in []awsv1.SubnetSelectorTerm) []awsv1beta1.SubnetSelectorTerm {
	return convertList(in, func(t awsv1.SubnetSelectorTerm) awsv1beta1.SubnetSelectorTerm {
		t.Tags = maps.Clone(t.Tags)
		return awsv1beta1.SubnetSelectorTerm(t)
	})
}

func securityGroupTermsToV1(in []awsv1beta1.SecurityGroupSelectorTerm) []awsv1.SecurityGroupSelectorTerm {
	return convertList(in, func(t awsv1beta1.SecurityGroupSelectorTerm) awsv1.SecurityGroupSelectorTerm {
		t.Tags = maps.Clone(t.Tags)
		return awsv1.SecurityGroupSelectorTerm(t)
	})
}

func securityGroupTermsToV1beta1(in []awsv1.SecurityGroupSelectorTerm) []awsv1beta1.SecurityGroupSelectorTerm {
	return convertList(in, func(t awsv1.SecurityGroupSelectorTerm) awsv1beta1.SecurityGroupSelectorTerm {
		t.Tags = maps.Clone(t.Tags)
		return awsv1beta1.SecurityGroupSelectorTerm(t)
	})
}

// amiTermsToV1 returns nil for no terms so that "absent" survives a round trip.
func amiTermsToV1(in []awsv1beta1.AMISelectorTerm) []awsv1.AMISelectorTerm {
	if len(in) == 0 {
		return nil
	}
	return convertList(in, func(t awsv1beta1.AMISelectorTerm) awsv1.AMISelectorTerm {
		return awsv1.AMISelectorTerm{Tags: maps.Clone(t.Tags), ID: t.ID, Name: t.Name, Owner: t.Owner}
	})
}

func amiTermsToV1beta1(in []awsv1.AMISelectorTerm) []awsv1beta1.AMISelectorTerm {
	if len(in) == 0 {
		return nil
	}
	return convertList(in, func(t awsv1.AMISelectorTerm) awsv1beta1.AMISelectorTerm {
		return awsv1beta1.AMISelectorTerm{Tags: maps.Clone(t.Tags), ID: t.ID, Name: t.Name, Owner: t.Owner}
	})
}

// Block devices have the same fields in v1 and v1beta1 but for v1's
// volumeInitializationRate, which v1beta1 cannot carry.
func blockDeviceMappingsToV1(in []*awsv1beta1.BlockDeviceMapping) []*awsv1.BlockDeviceMapping {
	return convertList(in, func(m *awsv1beta1.BlockDeviceMapping) *awsv1.BlockDeviceMapping {
		if m == nil {
			return nil
		}
		return &awsv1.BlockDeviceMapping{DeviceName: CopyPtr(m.DeviceName), RootVolume: m.RootVolume, EBS: ebsToV1(m.EBS)}
	})
}

func blockDeviceMappingsToV1beta1(in []*awsv1.BlockDeviceMapping) []*awsv1beta1.BlockDeviceMapping {
	return convertList(in, func(m *awsv1.BlockDeviceMapping) *awsv1beta1.BlockDeviceMapping {
		if m == nil {
			return nil
		}
		return &awsv1beta1.BlockDeviceMapping{DeviceName: CopyPtr(m.DeviceName), RootVolume: m.RootVolume, EBS: ebsToV1beta1(m.EBS)}
	})
}

func ebsToV1(in *awsv1beta1.BlockDevice) *awsv1.BlockDevice {
	if in == nil {
		return nil
	}
	c := in.DeepCopy()
	return &awsv1.BlockDevice{
		DeleteOnTermination: c.DeleteOnTermination, Encrypted: c.Encrypted, IOPS: c.IOPS, KMSKeyID: c.KMSKeyID,
		SnapshotID: c.SnapshotID, Throughput: c.Throughput, VolumeSize: c.VolumeSize, VolumeType: c.VolumeType,
	}
}

func ebsToV1beta1(in *awsv1.BlockDevice) *awsv1beta1.BlockDevice {
	if in == nil {
		return nil
	}
	c := in.DeepCopy()
	return &awsv1beta1.BlockDevice{
		DeleteOnTermination: c.DeleteOnTermination, Encrypted: c.Encrypted, IOPS: c.IOPS, KMSKeyID: c.KMSKeyID,
		SnapshotID: c.SnapshotID, Throughput: c.Throughput, VolumeSize: c.VolumeSize, VolumeType: c.VolumeType,
	}
}

func copyConditions(in []status.Condition) []status.Condition {
	if in == nil {
		return nil
	}
	out := make([]status.Condition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// CopyPtr returns a pointer to a copy of *p, or nil. The migrate package
// uses it too.
func CopyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// popAnnotation removes k from m (which may be nil) and returns its value.
func popAnnotation(m map[string]string, k string) (string, bool) {
	v, ok := m[k]
	if ok {
		delete(m, k)
	}
	return v, ok
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
