package v1alpha1

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AMI families accepted by the alpha API.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyUbuntu       = "Ubuntu"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyCustom       = "Custom"
)

// Reserved selector keys. Every other key of a selector map is a tag key.
const (
	// SelectorKeyIDs lists resource ids, comma separated. The dash form is
	// the older spelling and is still accepted.
	SelectorKeyIDs       = "aws::ids"
	SelectorKeyIDsLegacy = "aws-ids"
	// SelectorKeyAMIName and SelectorKeyAMIOwners are only valid in amiSelector.
	SelectorKeyAMIName   = "aws::name"
	SelectorKeyAMIOwners = "aws::owners"
)

// DeserializeProvider parses the raw spec.provider block of a v1alpha5
// Provisioner. Old provider blocks carry apiVersion/kind (for example
// extensions.karpenter.sh/v1alpha1, AWS); those and any other unknown keys
// are ignored, as the alpha controller did.
func DeserializeProvider(raw []byte) (*AWS, error) {
	a := &AWS{}
	if len(raw) == 0 {
		return a, nil
	}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("parsing spec.provider: %w", err)
	}
	return a, nil
}

var (
	subnetIDPattern = regexp.MustCompile(`^subnet-[0-9a-z]+$`)
	sgIDPattern     = regexp.MustCompile(`^sg-[0-9a-z]+$`)
	amiIDPattern    = regexp.MustCompile(`^ami-[0-9a-z]+$`)
	minVolumeSize   = resource.MustParse("1Gi")
	maxVolumeSize   = resource.MustParse("64Ti")
)

// restrictedTagPrefixes are the tag keys (or key prefixes) the alpha
// controller reserved for itself.
var restrictedTagPrefixes = []string{"kubernetes.io/cluster/", "karpenter.sh/provisioner-name", "karpenter.sh/managed-by"}

// Validate reproduces the rules the alpha admission webhook enforced on an
// AWSNodeTemplate. The CRD cannot express them (upstream never had CEL for
// the alpha kinds), but tools that convert old manifests use them to point at
// problems before conversion.
func (in *AWSNodeTemplate) Validate() field.ErrorList {
	path := field.NewPath("spec")
	errs := in.Spec.AWS.Validate(path)
	if in.Spec.LaunchTemplateName != nil {
		if in.Spec.UserData != nil {
			errs = append(errs, field.Forbidden(path.Child("userData"), "userData cannot be combined with launchTemplate"))
		}
		if len(in.Spec.AMISelector) != 0 {
			errs = append(errs, field.Forbidden(path.Child("amiSelector"), "amiSelector cannot be combined with launchTemplate"))
		}
	}
	if in.Spec.AMIFamily != nil && *in.Spec.AMIFamily == AMIFamilyCustom && len(in.Spec.AMISelector) == 0 {
		errs = append(errs, field.Required(path.Child("amiSelector"), "amiSelector is required when amiFamily is Custom"))
	}
	errs = append(errs, validateSelector(path.Child("amiSelector"), in.Spec.AMISelector, amiIDPattern, true)...)
	return errs
}

// Validate checks the provider fields shared by AWSNodeTemplate and the
// inline Provisioner provider block; path is where they live.
func (a *AWS) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(a.SubnetSelector) == 0 {
		errs = append(errs, field.Required(path.Child("subnetSelector"), "subnetSelector is required"))
	}
	errs = append(errs, validateSelector(path.Child("subnetSelector"), a.SubnetSelector, subnetIDPattern, false)...)
	if a.LaunchTemplateName == nil && len(a.SecurityGroupSelector) == 0 {
		errs = append(errs, field.Required(path.Child("securityGroupSelector"), "securityGroupSelector is required unless launchTemplate is set"))
	}
	errs = append(errs, validateSelector(path.Child("securityGroupSelector"), a.SecurityGroupSelector, sgIDPattern, false)...)
	if a.LaunchTemplateName != nil {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"securityGroupSelector", len(a.SecurityGroupSelector) != 0},
			{"metadataOptions", a.MetadataOptions != nil},
			{"amiFamily", a.AMIFamily != nil},
			{"instanceProfile", a.InstanceProfile != nil},
			{"blockDeviceMappings", len(a.BlockDeviceMappings) != 0},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(path.Child(f.name), f.name+" cannot be combined with launchTemplate"))
			}
		}
	}
	for _, k := range sortedKeys(a.Tags) {
		for _, p := range restrictedTagPrefixes {
			if strings.HasPrefix(k, p) {
				errs = append(errs, field.Invalid(path.Child("tags").Key(k), k, "tag key is restricted to Karpenter"))
			}
		}
	}
	for i, bdm := range a.BlockDeviceMappings {
		if bdm == nil || bdm.EBS == nil || bdm.EBS.VolumeSize == nil {
			continue
		}
		if bdm.EBS.VolumeSize.Cmp(minVolumeSize) < 0 || bdm.EBS.VolumeSize.Cmp(maxVolumeSize) > 0 {
			errs = append(errs, field.Invalid(path.Child("blockDeviceMappings").Index(i).Child("ebs", "volumeSize"), bdm.EBS.VolumeSize.String(), "volumeSize must be between 1Gi and 64Ti"))
		}
	}
	return errs
}

// validateSelector checks that the id key, when present, is the only key and
// lists valid ids, and that no key or value is empty. The AMI name and owner
// keys are allowed only in amiSelector.
func validateSelector(path *field.Path, sel map[string]string, idPattern *regexp.Regexp, ami bool) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(sel) {
		v := sel[k]
		if k == "" || v == "" {
			errs = append(errs, field.Invalid(path.Key(k), v, "selector keys and values cannot be empty"))
			continue
		}
		switch k {
		case SelectorKeyIDs, SelectorKeyIDsLegacy:
			if len(sel) > 1 {
				errs = append(errs, field.Invalid(path.Key(k), v, k+" must be the only key of the selector"))
			}
			for _, id := range strings.Split(v, ",") {
				if id = strings.TrimSpace(id); !idPattern.MatchString(id) {
					errs = append(errs, field.Invalid(path.Key(k), id, "not a valid id, expected "+idPattern.String()))
				}
			}
		case SelectorKeyAMIName, SelectorKeyAMIOwners:
			if !ami {
				errs = append(errs, field.Invalid(path.Key(k), v, k+" is only valid in amiSelector"))
			}
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
