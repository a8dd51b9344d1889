package subnet

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

func TestQueriesGroupIDsAndKeepTagTermsApart(t *testing.T) {
	qs := queries([]v1.SubnetSelectorTerm{
		{Tags: map[string]string{"karpenter.sh/discovery": "demo", "tier": "*"}},
		{ID: "subnet-b"},
		{Tags: map[string]string{"Name": "x"}},
		{ID: "subnet-a"},
		{ID: "subnet-b"},
	})
	want := []string{
		"tag:karpenter.sh/discovery=demo AND tag-key=tier",
		"tag:Name=x",
		"subnet-id=subnet-a,subnet-b",
	}
	if len(qs) != len(want) {
		t.Fatalf("%d queries, want %d", len(qs), len(want))
	}
	for i, q := range qs {
		if render(q) != want[i] {
			t.Errorf("filters.Query %d = %s, want %s", i, render(q), want[i])
		}
	}
	if got := qs[2].Terms; len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 4 {
		t.Errorf("id filters.Query answers terms %v, want [1 3 4]", got)
	}
}

func TestMostFreeIPsPerZone(t *testing.T) {
	got := MostFreeIPsPerZone([]Subnet{
		{ID: "subnet-1", Zone: "a", AvailableIPs: 10},
		{ID: "subnet-2", Zone: "a", AvailableIPs: 20},
		{ID: "subnet-4", Zone: "b", AvailableIPs: 5},
		{ID: "subnet-3", Zone: "b", AvailableIPs: 5},
	})
	if got["a"].ID != "subnet-2" || got["b"].ID != "subnet-3" || len(got) != 2 {
		t.Errorf("got %+v", got)
	}
}

func TestUnmatchedMessage(t *testing.T) {
	r := &Resolution{terms: []v1.SubnetSelectorTerm{{ID: "subnet-1"}, {Tags: map[string]string{"b": "2", "a": "*"}}}, Unmatched: []int{0, 1}}
	want := `subnetSelectorTerms[0] matched no subnet: id "subnet-1"; subnetSelectorTerms[1] matched no subnet: tags {"a":"*","b":"2"}`
	if r.UnmatchedMessage() != want {
		t.Errorf("got  %s\nwant %s", r.UnmatchedMessage(), want)
	}
}
