package securitygroup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/securitygroup"
)

const cluster = "karpenter-demo"

func setup(t *testing.T, opts ...securitygroup.Option) (*awsemulator.Emulator, *securitygroup.Provider, *clocktesting.FakeClock) {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	clk := clocktesting.NewFakeClock(time.Now())
	return e, securitygroup.NewProvider(ec2.NewFromConfig(awstest.Config(e)), clk, time.Minute, opts...), clk
}

func names(gs []securitygroup.SecurityGroup) string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name)
	}
	return strings.Join(out, ",")
}

func TestDiscoveryByTagNameAndID(t *testing.T) {
	e, p, _ := setup(t)
	ctx := context.Background()
	res, err := p.List(ctx, []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}})
	if err != nil {
		t.Fatal(err)
	}
	if names(res.SecurityGroups) != "eks-cluster-sg-"+cluster || res.SecurityGroups[0].ID == "" {
		t.Fatalf("tags: %+v", res.SecurityGroups)
	}
	clusterSG := res.SecurityGroups[0]

	// name is the EC2 group name, not the Name tag.
	web := e.AddSecurityGroup(awsemulator.SecurityGroup{Name: "web", Tags: map[string]string{"Name": "frontend"}})
	res, err = p.List(ctx, []v1.SecurityGroupSelectorTerm{{Name: "default"}, {Name: "frontend"}, {ID: web.ID}, {ID: clusterSG.ID}, {Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.SecurityGroups); got != 3 {
		t.Errorf("%d groups (%s), want default, web and the cluster group", got, names(res.SecurityGroups))
	}
	for i := 1; i < len(res.SecurityGroups); i++ {
		if res.SecurityGroups[i-1].ID >= res.SecurityGroups[i].ID {
			t.Errorf("not sorted by id: %+v", res.SecurityGroups)
		}
	}
	if want := `securityGroupSelectorTerms[1] matched no security group: name "frontend"`; res.UnmatchedMessage() != want {
		t.Errorf("unmatched: %q, want %q", res.UnmatchedMessage(), want)
	}
	// Tags in one term are ANDed; "*" is any value.
	res, err = p.List(ctx, []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster, "Name": "*"}}, {Tags: map[string]string{"karpenter.sh/discovery": cluster, "Name": "nope"}}})
	if err != nil {
		t.Fatal(err)
	}
	if names(res.SecurityGroups) != "eks-cluster-sg-"+cluster || len(res.Unmatched) != 1 || res.Unmatched[0] != 1 {
		t.Errorf("AND: %s unmatched %v", names(res.SecurityGroups), res.Unmatched)
	}
}

func TestPaginationRetriesAndCache(t *testing.T) {
	e, p, clk := setup(t, securitygroup.WithPageSize(5))
	ctx := context.Background()
	for i := 0; i < 7; i++ {
		e.AddSecurityGroup(awsemulator.SecurityGroup{Name: "paged-" + string(rune('a'+i)), Tags: map[string]string{"team": "paged"}})
	}
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSecurityGroups", Code: "InternalError", Count: 1})
	terms := []v1.SecurityGroupSelectorTerm{{Tags: map[string]string{"team": "paged"}}}
	res, err := p.List(ctx, terms)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SecurityGroups) != 7 || e.Calls("ec2", "DescribeSecurityGroups") != 3 {
		t.Errorf("%d groups in %d calls, want 7 in 2 pages + 1 retried 500", len(res.SecurityGroups), e.Calls("ec2", "DescribeSecurityGroups"))
	}
	if _, err := p.List(ctx, terms); err != nil || e.Calls("ec2", "DescribeSecurityGroups") != 3 {
		t.Errorf("cached: %v, %d calls", err, e.Calls("ec2", "DescribeSecurityGroups"))
	}
	clk.Step(time.Minute)
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSecurityGroups", Code: "RequestLimitExceeded"})
	if _, err := p.List(ctx, terms); err == nil || !strings.Contains(err.Error(), "securityGroupSelectorTerms[0]") {
		t.Errorf("persistent throttling must surface, naming the term: %v", err)
	}
}
