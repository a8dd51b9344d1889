package v1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

func TestAMIFamilyResolution(t *testing.T) {
	cases := []struct {
		family *string
		terms  []awsv1.AMISelectorTerm
		want   string
	}{
		{nil, []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, "AL2023"},
		{nil, []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.0"}}, "Bottlerocket"},
		{nil, []awsv1.AMISelectorTerm{{Alias: "windows2019@latest"}}, "Windows2019"},
		{ptr.To("Custom"), []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}, "Custom"},
		{ptr.To("AL2"), []awsv1.AMISelectorTerm{{ID: "ami-1"}}, "AL2"},
		{nil, []awsv1.AMISelectorTerm{{ID: "ami-1"}}, "Custom"},
	}
	for _, c := range cases {
		nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: c.family, AMISelectorTerms: c.terms}}
		if got := nc.AMIFamily(); got != c.want {
			t.Errorf("amiFamily %v terms %+v: AMIFamily() = %q, want %q", c.family, c.terms, got, c.want)
		}
	}
}

func TestParseAlias(t *testing.T) {
	a, ok := awsv1.ParseAlias("al2023@v20240625")
	if !ok || a.Family != "al2023" || a.Version != "v20240625" || a.String() != "al2023@v20240625" {
		t.Errorf("ParseAlias = %+v, %v", a, ok)
	}
	for _, bad := range []string{"al2023", "@latest", "al2023@", ""} {
		if _, ok := awsv1.ParseAlias(bad); ok {
			t.Errorf("ParseAlias(%q) accepted", bad)
		}
	}
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}}}
	if nc.Alias() != nil {
		t.Errorf("Alias() of id terms = %+v, want nil", nc.Alias())
	}
}
