package karpenter_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/crds"
)

// TestAWSLabelRulesMatchWellKnownLabels: the CEL rules that restrict the
// karpenter.k8s.aws label domain in NodePool/NodeClaim requirements and labels
// allow exactly the provider's well-known labels of that domain. The rule text
// is written in kubebuilder markers, so this test is what keeps it in sync
// with pkg/apis/aws/v1/labels.go.
func TestAWSLabelRulesMatchWellKnownLabels(t *testing.T) {
	var want []string
	for _, l := range awsv1.WellKnownLabels {
		if strings.HasPrefix(l, awsv1.Group+"/") {
			want = append(want, l)
		}
	}
	sort.Strings(want)
	quoted := regexp.MustCompile(`'(karpenter\.k8s\.aws/[^']+)'`)
	checked := 0
	for _, crd := range crds.CRDs() {
		if crd.Spec.Group != "karpenter.sh" || (crd.Spec.Names.Kind != "NodePool" && crd.Spec.Names.Kind != "NodeClaim") {
			continue
		}
		for _, v := range crd.Spec.Versions {
			walk(v.Schema.OpenAPIV3Schema, func(path string, rule apiextensionsv1.ValidationRule) {
				if !strings.Contains(rule.Message, `"karpenter.k8s.aws" is restricted`) {
					return
				}
				checked++
				var got []string
				for _, m := range quoted.FindAllStringSubmatch(rule.Rule, -1) {
					got = append(got, m[1])
				}
				sort.Strings(got)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("%s %s %s allows %v, want %v", crd.Name, v.Name, path, got, want)
				}
			})
		}
	}
	if checked < 4 {
		t.Fatalf("found only %d karpenter.k8s.aws domain rules", checked)
	}
}

func walk(s *apiextensionsv1.JSONSchemaProps, f func(string, apiextensionsv1.ValidationRule)) {
	var rec func(path string, s *apiextensionsv1.JSONSchemaProps)
	rec = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		for _, r := range s.XValidations {
			f(path, r)
		}
		for name, p := range s.Properties {
			rec(path+"."+name, &p)
		}
		if s.Items != nil {
			rec(path+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			rec(path+"{}", s.AdditionalProperties.Schema)
		}
	}
	rec("", s)
}
