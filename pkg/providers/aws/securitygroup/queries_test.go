package securitygroup

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/filters"
)

func render(q filters.Query) string {
	var parts []string
	for _, f := range q.Filters {
		parts = append(parts, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	return strings.Join(parts, " AND ")
}

func TestQueries(t *testing.T) {
	qs := queries([]v1.SecurityGroupSelectorTerm{
		{Tags: map[string]string{"karpenter.sh/discovery": "demo"}},
		{Name: "default"},
		{ID: "sg-2"},
		{Name: "eks-cluster-sg-demo"},
		{ID: "sg-1"},
	})
	want := []string{
		"tag:karpenter.sh/discovery=demo",
		"group-id=sg-1,sg-2",
		"group-name=default,eks-cluster-sg-demo",
	}
	if len(qs) != len(want) {
		t.Fatalf("%d queries, want %d", len(qs), len(want))
	}
	for i, q := range qs {
		if render(q) != want[i] {
			t.Errorf("filters.Query %d = %s, want %s", i, render(q), want[i])
		}
	}
}

func TestUnmatchedMessage(t *testing.T) {
	r := &Resolution{terms: []v1.SecurityGroupSelectorTerm{{Name: "nope"}}, Unmatched: []int{0}}
	if want := `securityGroupSelectorTerms[0] matched no security group: name "nope"`; r.UnmatchedMessage() != want {
		t.Errorf("got %s", r.UnmatchedMessage())
	}
}
