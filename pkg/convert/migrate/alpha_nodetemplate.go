package migrate

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// DefaultNodeRole is written into spec.role of every EC2NodeClass made from
// an alpha object when no --node-role is given. It is a placeholder for
// envsubst: the alpha objects named an instance profile, from which the role
// cannot be derived offline.
const DefaultNodeRole = "$KARPENTER_NODE_ROLE"

// launchTemplateAdvice is the migration path for unmanaged launch templates,
// which no version after v1alpha1 supports.
const launchTemplateAdvice = "launch templates are not supported by EC2NodeClass: move their settings " +
	"into the EC2NodeClass (amiSelectorTerms, userData, blockDeviceMappings, metadataOptions, " +
	"securityGroupSelectorTerms, tags) and remove launchTemplate, then convert again"

// Limits of the v1 selector schema. Emitting more would make the converted
// object fail validation.
const (
	maxSelectorTerms = 30
	maxSelectorTags  = 20
)

// restrictedTagKeys are tags Karpenter sets itself; v1beta1/v1 reject them in
// spec.tags (karpenter.sh/managed-by is replaced by eks:eks-cluster-name).
var restrictedTagKeys = []string{"karpenter.sh/managed-by", "karpenter.sh/provisioner-name", "karpenter.sh/nodepool",
	"karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass", "eks:eks-cluster-name"}

const restrictedTagPrefix = "kubernetes.io/cluster/"

// nodeTemplateToEC2NodeClass converts an AWSNodeTemplate (or the provider
// block of a Provisioner, wrapped in one) into a v1beta1 EC2NodeClass.
// where names the spec path for messages ("spec" or "spec.provider").
func nodeTemplateToEC2NodeClass(in *awsv1alpha1.AWSNodeTemplate, opts Options, where string, warn func(string)) (*awsv1beta1.EC2NodeClass, error) {
	s := &in.Spec
	if s.LaunchTemplateName != nil {
		return nil, fmt.Errorf("%s.launchTemplate (%q) cannot be converted: %s", where, *s.LaunchTemplateName, launchTemplateAdvice)
	}
	out := &awsv1beta1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1beta1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: keptMetadata(in.ObjectMeta),
	}
	o := &out.Spec
	family := awsv1alpha1.AMIFamilyAL2
	if s.AMIFamily != nil && *s.AMIFamily != "" {
		family = *s.AMIFamily
	}
	o.AMIFamily = &family

	subnets, err := expandTagSelector(s.SubnetSelector, where+".subnetSelector", "subnet-", warn)
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("%s.subnetSelector is required: EC2NodeClass needs at least one subnet selector term", where)
	}
	for _, t := range subnets {
		o.SubnetSelectorTerms = append(o.SubnetSelectorTerms, awsv1beta1.SubnetSelectorTerm{ID: t.id, Tags: t.tags})
	}
	groups, err := expandTagSelector(s.SecurityGroupSelector, where+".securityGroupSelector", "sg-", warn)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("%s.securityGroupSelector is required: EC2NodeClass needs at least one security group selector term", where)
	}
	for _, t := range groups {
		o.SecurityGroupSelectorTerms = append(o.SecurityGroupSelectorTerms, awsv1beta1.SecurityGroupSelectorTerm{ID: t.id, Tags: t.tags})
	}
	amis, err := expandAMISelector(s.AMISelector, where+".amiSelector", warn)
	if err != nil {
		return nil, err
	}
	o.AMISelectorTerms = amis
	if family == awsv1alpha1.AMIFamilyCustom && len(amis) == 0 {
		return nil, fmt.Errorf("%s.amiFamily is Custom but amiSelector is empty: EC2NodeClass requires amiSelectorTerms for Custom", where)
	}

	o.Role = DefaultNodeRole
	if opts.NodeRole != "" {
		o.Role = opts.NodeRole
	}
	switch {
	case opts.KeepInstanceProfile && s.InstanceProfile != nil:
		o.InstanceProfile = convert.CopyPtr(s.InstanceProfile)
		o.Role = ""
		warn(fmt.Sprintf("%s.instanceProfile %q kept as spec.instanceProfile (--keep-instance-profile): Karpenter uses it as it is and never changes or deletes it", where, *s.InstanceProfile))
	case opts.KeepInstanceProfile:
		warn(fmt.Sprintf("--keep-instance-profile: %s.instanceProfile is not set (the defaultInstanceProfile setting applied), so there is no profile to keep: spec.role %q is written instead; set spec.instanceProfile by hand to keep the default profile", where, o.Role))
	case s.InstanceProfile != nil:
		warn(fmt.Sprintf("%s.instanceProfile %q dropped: EC2NodeClass uses spec.role %q and Karpenter creates the instance profile (or convert with --keep-instance-profile)", where, *s.InstanceProfile, o.Role))
	}
	if o.Role == DefaultNodeRole {
		warn(fmt.Sprintf("spec.role is the placeholder %s: replace it with the node IAM role (envsubst, or --node-role)", DefaultNodeRole))
	}
	o.UserData = convert.CopyPtr(s.UserData)
	o.Context = convert.CopyPtr(s.Context)
	o.DetailedMonitoring = convert.CopyPtr(s.DetailedMonitoring)
	for _, k := range sortedKeys(s.Tags) {
		if restrictedTag(k) {
			warn(fmt.Sprintf("%s.tags[%s] dropped: Karpenter sets this tag itself and EC2NodeClass rejects it", where, k))
			continue
		}
		if o.Tags == nil {
			o.Tags = map[string]string{}
		}
		o.Tags[k] = s.Tags[k]
	}
	if m := s.MetadataOptions; m != nil {
		o.MetadataOptions = &awsv1beta1.MetadataOptions{
			HTTPEndpoint:            convert.CopyPtr(m.HTTPEndpoint),
			HTTPProtocolIPv6:        convert.CopyPtr(m.HTTPProtocolIPv6),
			HTTPPutResponseHopLimit: convert.CopyPtr(m.HTTPPutResponseHopLimit),
			HTTPTokens:              convert.CopyPtr(m.HTTPTokens),
		}
	}
	for _, m := range s.BlockDeviceMappings {
		if m == nil {
			continue
		}
		bdm := &awsv1beta1.BlockDeviceMapping{DeviceName: convert.CopyPtr(m.DeviceName)}
		if e := m.EBS; e != nil {
			bdm.EBS = &awsv1beta1.BlockDevice{
				DeleteOnTermination: convert.CopyPtr(e.DeleteOnTermination),
				Encrypted:           convert.CopyPtr(e.Encrypted),
				IOPS:                convert.CopyPtr(e.IOPS),
				KMSKeyID:            convert.CopyPtr(e.KMSKeyID),
				SnapshotID:          convert.CopyPtr(e.SnapshotID),
				Throughput:          convert.CopyPtr(e.Throughput),
				VolumeType:          convert.CopyPtr(e.VolumeType),
			}
			if e.VolumeSize != nil {
				q := e.VolumeSize.DeepCopy()
				bdm.EBS.VolumeSize = &q
			}
		}
		o.BlockDeviceMappings = append(o.BlockDeviceMappings, bdm)
	}
	return out, nil
}

func restrictedTag(k string) bool {
	for _, r := range restrictedTagKeys {
		if k == r {
			return true
		}
	}
	return strings.HasPrefix(k, restrictedTagPrefix)
}

// selectorTerm is one alternative of an alpha selector: an id, or a set of
// tags that must all match.
type selectorTerm struct {
	id   string
	tags map[string]string
}

// expandTagSelector turns an alpha subnet or security group selector (a map
// whose entries are ANDed) into v1 terms (which are ORed). aws::ids (or
// aws-ids) becomes one id term per id; v1 forbids an id beside tags, so any
// tag keys next to the ids are dropped with a warning (the alpha webhook
// required the id key to stand alone). Comma separated tag values are
// alternatives, so the terms are the cartesian product of the values, keys
// in sorted order, the last key varying fastest.
func expandTagSelector(sel map[string]string, where, idPrefix string, warn func(string)) ([]selectorTerm, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	ids, tagKeys, err := splitIDs(sel, where, idPrefix, nil)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		if len(tagKeys) > 0 {
			warn(fmt.Sprintf("%s: %s dropped, v1 selects by id or by tags, not both; the ids are kept", where, strings.Join(tagKeys, ", ")))
		}
		if len(ids) > maxSelectorTerms {
			return nil, fmt.Errorf("%s lists %d ids, more than the %d selector terms EC2NodeClass allows", where, len(ids), maxSelectorTerms)
		}
		terms := make([]selectorTerm, len(ids))
		for i, id := range ids {
			terms[i] = selectorTerm{id: id}
		}
		return terms, nil
	}
	sets, err := tagCombinations(sel, tagKeys, where)
	if err != nil {
		return nil, err
	}
	terms := make([]selectorTerm, len(sets))
	for i, s := range sets {
		terms[i] = selectorTerm{tags: s}
	}
	return terms, nil
}

// expandAMISelector turns an alpha amiSelector into AMI selector terms:
// aws::ids become id-only terms (v1 forbids an id beside anything else),
// otherwise every combination of owner, name and tag alternatives becomes a
// term, owners outermost.
func expandAMISelector(sel map[string]string, where string, warn func(string)) ([]awsv1beta1.AMISelectorTerm, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	special := []string{awsv1alpha1.SelectorKeyAMIName, awsv1alpha1.SelectorKeyAMIOwners}
	ids, tagKeys, err := splitIDs(sel, where, "ami-", special)
	if err != nil {
		return nil, err
	}
	var terms []awsv1beta1.AMISelectorTerm
	if len(ids) > 0 {
		var others []string
		for _, k := range sortedKeys(sel) {
			if k != awsv1alpha1.SelectorKeyIDs && k != awsv1alpha1.SelectorKeyIDsLegacy {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			warn(fmt.Sprintf("%s: %s dropped, v1 selects an AMI by id alone; the ids are kept", where, strings.Join(others, ", ")))
		}
		for _, id := range ids {
			terms = append(terms, awsv1beta1.AMISelectorTerm{ID: id})
		}
	} else {
		names, err := alternatives(sel, awsv1alpha1.SelectorKeyAMIName, where)
		if err != nil {
			return nil, err
		}
		owners, err := alternatives(sel, awsv1alpha1.SelectorKeyAMIOwners, where)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 && len(tagKeys) == 0 {
			return nil, fmt.Errorf("%s has only aws::owners: an AMI selector term needs a name, tags or an id besides the owner", where)
		}
		sets, err := tagCombinations(sel, tagKeys, where)
		if err != nil {
			return nil, err
		}
		if len(owners) == 0 {
			owners = []string{""}
		}
		if len(names) == 0 {
			names = []string{""}
		}
		if len(sets) == 0 {
			sets = []map[string]string{nil}
		}
		for _, owner := range owners {
			for _, name := range names {
				for _, tags := range sets {
					if len(terms) == maxSelectorTerms {
						return nil, fmt.Errorf("%s expands to more than the %d selector terms EC2NodeClass allows (%d owners x %d names x %d tag combinations)",
							where, maxSelectorTerms, len(owners), len(names), len(sets))
					}
					terms = append(terms, awsv1beta1.AMISelectorTerm{Owner: owner, Name: name, Tags: maps.Clone(tags)})
				}
			}
		}
	}
	if len(terms) > maxSelectorTerms {
		return nil, fmt.Errorf("%s lists %d ids, more than the %d selector terms EC2NodeClass allows", where, len(terms), maxSelectorTerms)
	}
	return terms, nil
}

// splitIDs returns the ids of the selector (from aws::ids or aws-ids) and
// the remaining keys that are tags (all keys but the ids and special ones).
func splitIDs(sel map[string]string, where, idPrefix string, special []string) ([]string, []string, error) {
	var ids, tagKeys []string
	for _, k := range sortedKeys(sel) {
		switch {
		case k == awsv1alpha1.SelectorKeyIDs || k == awsv1alpha1.SelectorKeyIDsLegacy:
			v, err := alternatives(sel, k, where)
			if err != nil {
				return nil, nil, err
			}
			for _, id := range v {
				if !validID(id, idPrefix) {
					return nil, nil, fmt.Errorf("%s[%s]: %q is not a valid id (expected %s followed by lower-case letters and digits)", where, k, id, idPrefix)
				}
			}
			ids = appendUnique(ids, v...)
		case contains(special, k):
		default:
			if strings.TrimSpace(k) == "" {
				return nil, nil, fmt.Errorf("%s has an empty key", where)
			}
			tagKeys = append(tagKeys, k)
		}
	}
	return ids, tagKeys, nil
}

// alternatives splits a comma separated selector value into its trimmed,
// non-empty parts; a key that is present must give at least one.
func alternatives(sel map[string]string, key, where string) ([]string, error) {
	v, ok := sel[key]
	if !ok {
		return nil, nil
	}
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = appendUnique(out, part)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s[%s] is empty", where, key)
	}
	return out, nil
}

func tagCombinations(sel map[string]string, keys []string, where string) ([]map[string]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > maxSelectorTags {
		return nil, fmt.Errorf("%s has %d tag keys, more than the %d a selector term allows", where, len(keys), maxSelectorTags)
	}
	sets := []map[string]string{{}}
	for _, k := range keys {
		values, err := alternatives(sel, k, where)
		if err != nil {
			return nil, err
		}
		if len(sets)*len(values) > maxSelectorTerms {
			return nil, fmt.Errorf("%s: the comma separated tag values expand to more than the %d selector terms EC2NodeClass allows", where, maxSelectorTerms)
		}
		next := make([]map[string]string, 0, len(sets)*len(values))
		for _, s := range sets {
			for _, v := range values {
				c := maps.Clone(s)
				c[k] = v
				next = append(next, c)
			}
		}
		sets = next
	}
	return sets, nil
}

// validID mirrors the v1 id patterns (subnet-[0-9a-z]+, sg-..., ami-...).
func validID(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func appendUnique(s []string, vs ...string) []string {
	for _, v := range vs {
		if !contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// keptMetadata is what a converted object keeps of the old one's metadata:
// its name, labels and annotations. Everything else is either written by the
// server or belongs to the old object's lifecycle (finalizers, owners).
func keptMetadata(in metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: in.Name, Labels: maps.Clone(in.Labels), Annotations: maps.Clone(in.Annotations)}
	delete(out.Annotations, lastAppliedAnnotation)
	// The old controllers' hashes mean nothing to v1, which stamps its own.
	for _, a := range oldHashAnnotations {
		delete(out.Annotations, a)
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	return out
}
