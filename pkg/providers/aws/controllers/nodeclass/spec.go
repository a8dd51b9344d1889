package nodeclass

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily/bootstrap"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/kubeletcel"
)

// ValidationSucceeded reasons of the checks of the spec itself, which need
// no AWS call and run before the dry runs.
const (
	// ReasonInvalidKubeletConfiguration: spec.kubelet holds an unknown
	// field, a value of the wrong type, or a value out of range.
	ReasonInvalidKubeletConfiguration = "InvalidKubeletConfiguration"
	// ReasonUnsupportedKubeletConfiguration: spec.kubelet sets a field the
	// class's AMI family cannot write into the node's kubelet configuration.
	ReasonUnsupportedKubeletConfiguration = "UnsupportedKubeletConfiguration"
	// ReasonUnsupportedField: the spec sets a field whose behaviour this
	// build does not implement; launching without it would ignore it.
	ReasonUnsupportedField = "UnsupportedField"
	// ReasonInvalidSpec: a value the schema accepts (as upstream's does)
	// but EC2 or SSM would refuse.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonKubeletExpressionsDisabled: spec.kubelet holds a CEL
	// expression (a string maxPods, a kubeReserved or systemReserved value
	// that is not a quantity) and the NodeClassCEL feature gate is off.
	ReasonKubeletExpressionsDisabled = "KubeletExpressionsDisabled"
	// ReasonKubeletExpressionInvalid: a CEL expression of spec.kubelet does
	// not compile or does not return an int or a double.
	ReasonKubeletExpressionInvalid = "KubeletExpressionInvalid"
)

// maxSSMParameterName is the longest SSM parameter name (or ARN) SSM takes.
const maxSSMParameterName = 2048

// specProblem is a failed check of the spec: the condition reason and a
// message naming the field.
type specProblem struct {
	reason, message string
}

// checkSpec runs the checks of the spec that the CRD schema does not do.
// It returns nil when the spec can be launched as written. nodeClassCEL is
// the NodeClassCEL feature gate.
func checkSpec(nc *v1.EC2NodeClass, nodeClassCEL bool) *specProblem {
	if errs := v1.ValidateKubelet(nc.Spec.Kubelet); len(errs) > 0 {
		return &specProblem{ReasonInvalidKubeletConfiguration, strings.Join(errs, "; ")}
	}
	if p := checkKubeletExpressions(nc.Spec.Kubelet, nodeClassCEL); p != nil {
		return p
	}
	if msgs := invalidValues(nc); len(msgs) > 0 {
		return &specProblem{ReasonInvalidSpec, strings.Join(msgs, "; ")}
	}
	if msg := unsupportedKubelet(nc); msg != "" {
		return &specProblem{ReasonUnsupportedKubeletConfiguration, msg}
	}
	if fields := unsupportedFields(nc); len(fields) > 0 {
		verb := "are"
		if len(fields) == 1 {
			verb = "is"
		}
		return &specProblem{ReasonUnsupportedField, fmt.Sprintf("%s %s not supported by this build yet; no node is launched from this EC2NodeClass until it is removed", strings.Join(fields, ", "), verb)}
	}
	return nil
}

// kubeletExpressions lists the CEL expressions of spec.kubelet by field
// path, sorted: maxPods, then kubeReserved and systemReserved by key.
func kubeletExpressions(k *v1.KubeletConfiguration) (paths, expressions []string) {
	if expr, ok := k.MaxPodsExpression(); ok {
		paths, expressions = append(paths, "spec.kubelet.maxPods"), append(expressions, expr)
	}
	if k == nil {
		return paths, expressions
	}
	for _, m := range []struct {
		name   string
		values map[string]string
	}{{"kubeReserved", k.KubeReserved}, {"systemReserved", k.SystemReserved}} {
		keys := make([]string, 0, len(m.values))
		for key, value := range m.values {
			if kubeletcel.IsExpression(value) {
				keys = append(keys, key)
			}
		}
		sort.Strings(keys)
		for _, key := range keys {
			paths = append(paths, fmt.Sprintf("spec.kubelet.%s[%s]", m.name, key))
			expressions = append(expressions, m.values[key])
		}
	}
	return paths, expressions
}

// checkKubeletExpressions refuses CEL expressions in spec.kubelet when the
// NodeClassCEL gate is off (launching would silently use the family's
// defaults instead), and expressions that do not compile to a number when
// it is on. Whether an expression evaluates for every instance type is
// checked later, against the instance types.
func checkKubeletExpressions(k *v1.KubeletConfiguration, nodeClassCEL bool) *specProblem {
	paths, expressions := kubeletExpressions(k)
	if len(paths) == 0 {
		return nil
	}
	if !nodeClassCEL {
		return &specProblem{ReasonKubeletExpressionsDisabled, fmt.Sprintf(
			"spec.kubelet contains a CEL expression (%s), but the NodeClassCEL feature gate is disabled (AWS_FEATURE_GATES); no node is launched from this EC2NodeClass until the gate is enabled or the expressions are replaced by values",
			strings.Join(paths, ", "))}
	}
	env := kubeletcel.Shared()
	var msgs []string
	for i, expr := range expressions {
		if err := env.Validate(expr); err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", paths[i], err))
		}
	}
	if len(msgs) > 0 {
		return &specProblem{ReasonKubeletExpressionInvalid, strings.Join(msgs, "; ")}
	}
	return nil
}

// invalidValues are the spec values the schema lets through that AWS would
// refuse, each with its field path.
func invalidValues(nc *v1.EC2NodeClass) []string {
	var out []string
	for i, b := range nc.Spec.BlockDeviceMappings {
		if b != nil && b.EBS != nil && b.EBS.InvalidVolumeSize != "" {
			out = append(out, fmt.Sprintf("spec.blockDeviceMappings[%d].ebs.volumeSize: %q is not a volume size (a number is needed before the unit)", i, b.EBS.InvalidVolumeSize))
		}
	}
	for i, t := range nc.Spec.AMISelectorTerms {
		if len(t.SSMParameter) > maxSSMParameterName {
			out = append(out, fmt.Sprintf("spec.amiSelectorTerms[%d].ssmParameter: %d characters, SSM parameter names have at most %d", i, len(t.SSMParameter), maxSSMParameterName))
		}
	}
	return out
}

// unsupportedFields are the spec fields a user may set (the CRD accepts
// them) whose behaviour is not built.
func unsupportedFields(nc *v1.EC2NodeClass) []string {
	var out []string
	s := &nc.Spec
	// The schema lets ssmParameter sit beside other fields of a term (as
	// upstream's does) but a term resolves through one of them only.
	for i, t := range s.AMISelectorTerms {
		if t.SSMParameter == "" {
			continue
		}
		var others []string
		for name, set := range map[string]bool{"alias": t.Alias != "", "id": t.ID != "", "name": t.Name != "", "owner": t.Owner != "", "tags": len(t.Tags) > 0} {
			if set {
				others = append(others, name)
			}
		}
		if len(others) > 0 {
			sort.Strings(others)
			out = append(out, fmt.Sprintf("spec.amiSelectorTerms[%d].ssmParameter combined with %s", i, strings.Join(others, ", ")))
		}
	}
	return out
}

// unsupportedKubelet names the kubelet fields the class's AMI family does
// not write into the node's kubelet configuration, each with the reason.
// AL2023 writes every field (its NodeConfig carries a KubeletConfiguration);
// AL2 merges the fields into the AMI's kubelet-config.json; Bottlerocket
// and Windows write the fields they have a setting or a kubelet flag for;
// Custom writes none and owns its user data, so nothing is promised there.
func unsupportedKubelet(nc *v1.EC2NodeClass) string {
	k := nc.Spec.Kubelet
	family := nc.AMIFamily()
	if k == nil || family == v1.AMIFamilyAL2023 || family == v1.AMIFamilyCustom {
		return ""
	}
	var msgs []string
	for _, f := range bootstrap.UnappliedKubelet(family, k) {
		msgs = append(msgs, fmt.Sprintf("spec.kubelet.%s: not applied by the %s AMI family's bootstrap, %s", f.Field, family, f.Reason))
	}
	// AL2 and Windows give the kubelet a single cluster DNS address.
	if family != v1.AMIFamilyBottlerocket && len(k.ClusterDNS) > 1 {
		msgs = append(msgs, fmt.Sprintf("spec.kubelet.clusterDNS: the %s AMI family takes one address, %d were set", family, len(k.ClusterDNS)))
	}
	return strings.Join(msgs, "; ")
}
