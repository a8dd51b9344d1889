package subnet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
)

const cluster = "karpenter-demo"

func setup(t *testing.T, opts ...subnet.Option) (*awsemulator.Emulator, *subnet.Provider, *clocktesting.FakeClock) {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	clk := clocktesting.NewFakeClock(time.Now())
	return e, subnet.NewProvider(ec2.NewFromConfig(awstest.Config(e)), clk, time.Minute, opts...), clk
}

func discovery() map[string]string { return map[string]string{"karpenter.sh/discovery": cluster} }

func ids(ss []subnet.Subnet) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// seeded returns the seeded subnet of a zone, private or public.
func seeded(t *testing.T, e *awsemulator.Emulator, zone string, private bool) awsemulator.Subnet {
	t.Helper()
	kind := "public"
	if private {
		kind = "private"
	}
	for _, s := range e.Subnets() {
		if s.Tags["Name"] == cluster+"-"+kind+"-"+zone {
			return s
		}
	}
	t.Fatalf("no seeded %s subnet in %s", kind, zone)
	return awsemulator.Subnet{}
}

func TestDiscoveryByTag(t *testing.T) {
	e, p, _ := setup(t)
	res, err := p.List(context.Background(), []v1.SubnetSelectorTerm{{Tags: discovery()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 4 || len(res.Unmatched) != 0 {
		t.Fatalf("got %d subnets, unmatched %v; want the 4 private subnets", len(res.Subnets), res.Unmatched)
	}
	zones := map[string]string{}
	for _, s := range res.Subnets {
		if s.AvailableIPs != 8187 || s.VPCID == "" || s.Tags["karpenter.sh/discovery"] != cluster {
			t.Errorf("subnet %+v", s)
		}
		zones[s.Zone] = s.ZoneID
	}
	want := map[string]string{"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2", "us-west-2c": "usw2-az3", "us-west-2d": "usw2-az4"}
	if fmt.Sprint(zones) != fmt.Sprint(want) {
		t.Errorf("zones %v, want %v", zones, want)
	}
	if got := ids(res.Subnets); got[0] > got[1] || got[1] > got[2] {
		t.Errorf("equal free IPs must sort by id: %v", got)
	}
	_ = e
}

func TestTermsAreORedFieldsANDed(t *testing.T) {
	e, p, _ := setup(t)
	ctx := context.Background()
	privA := seeded(t, e, "us-west-2a", true)
	pubB := seeded(t, e, "us-west-2b", false)

	// Two tags in one term: both must hold.
	res, err := p.List(ctx, []v1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster, "Name": privA.Tags["Name"]}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Subnets); len(got) != 1 || got[0] != privA.ID {
		t.Errorf("AND: got %v, want [%s]", got, privA.ID)
	}
	// Terms are ORed: the private subnets plus the public ones.
	res, err = p.List(ctx, []v1.SubnetSelectorTerm{{Tags: discovery()}, {Tags: map[string]string{"kubernetes.io/role/elb": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 8 {
		t.Errorf("OR: %d subnets, want 8", len(res.Subnets))
	}
	// Most free IPs first: the 4 private (8187) before the 4 public (251).
	for i, s := range res.Subnets {
		if want := int32(8187); i < 4 && s.AvailableIPs != want || i >= 4 && s.AvailableIPs != 251 {
			t.Errorf("position %d: %s with %d free IPs", i, s.ID, s.AvailableIPs)
		}
	}
	// "*" means the key exists with any value.
	res, err = p.List(ctx, []v1.SubnetSelectorTerm{{Tags: map[string]string{"kubernetes.io/role/elb": "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 4 {
		t.Errorf("tag-key: %d subnets, want the 4 public", len(res.Subnets))
	}
	// Ids stand alone; overlapping terms give each subnet once; a missing id is named.
	res, err = p.List(ctx, []v1.SubnetSelectorTerm{{ID: pubB.ID}, {Tags: discovery()}, {ID: "subnet-0000000000000dead"}, {ID: privA.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 5 {
		t.Errorf("ids + tags: %d subnets, want 5 (4 private + %s)", len(res.Subnets), pubB.ID)
	}
	if fmt.Sprint(res.Unmatched) != "[2]" || !strings.Contains(res.UnmatchedMessage(), `subnetSelectorTerms[2] matched no subnet: id "subnet-0000000000000dead"`) {
		t.Errorf("unmatched %v: %s", res.Unmatched, res.UnmatchedMessage())
	}
	// Nothing matches: every term named.
	res, err = p.List(ctx, []v1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other-cluster"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 0 || res.UnmatchedMessage() != `subnetSelectorTerms[0] matched no subnet: tags {"karpenter.sh/discovery":"other-cluster"}` {
		t.Errorf("got %v, %q", ids(res.Subnets), res.UnmatchedMessage())
	}
}

func TestPagination(t *testing.T) {
	e, p, _ := setup(t, subnet.WithPageSize(5))
	for i := 0; i < 12; i++ {
		e.AddSubnet(awsemulator.Subnet{Zone: "us-west-2c", AvailableIPs: 100 + i, Tags: map[string]string{"team": "paged"}})
	}
	res, err := p.List(context.Background(), []v1.SubnetSelectorTerm{{Tags: map[string]string{"team": "paged"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 12 {
		t.Errorf("%d subnets, want 12 over several pages", len(res.Subnets))
	}
	if n := e.Calls("ec2", "DescribeSubnets"); n != 3 {
		t.Errorf("%d DescribeSubnets calls, want 3 pages of 5", n)
	}
	if res.Subnets[0].AvailableIPs != 111 {
		t.Errorf("first subnet has %d free IPs, want the most (111)", res.Subnets[0].AvailableIPs)
	}
}

func TestThrottlingIsRetried(t *testing.T) {
	e, p, _ := setup(t)
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "RequestLimitExceeded", Count: 2})
	res, err := p.List(context.Background(), []v1.SubnetSelectorTerm{{Tags: discovery()}})
	if err != nil {
		t.Fatalf("two throttles must be retried by the SDK: %v", err)
	}
	if len(res.Subnets) != 4 || e.Calls("ec2", "DescribeSubnets") != 3 {
		t.Errorf("%d subnets after %d calls, want 4 after 3", len(res.Subnets), e.Calls("ec2", "DescribeSubnets"))
	}
	// Throttled beyond the retries: an error that names the term.
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "RequestLimitExceeded"})
	_, err = p.List(context.Background(), []v1.SubnetSelectorTerm{{Tags: map[string]string{"other": "term"}}})
	if err == nil || !strings.Contains(err.Error(), "subnetSelectorTerms[0]") || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("err = %v", err)
	}
}

func TestCacheAndRefresh(t *testing.T) {
	e, p, clk := setup(t)
	ctx := context.Background()
	terms := []v1.SubnetSelectorTerm{{Tags: discovery()}}
	if _, err := p.List(ctx, terms); err != nil {
		t.Fatal(err)
	}
	victim := seeded(t, e, "us-west-2d", true)
	e.RemoveSubnet(victim.ID)
	res, err := p.List(ctx, terms)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 4 || e.Calls("ec2", "DescribeSubnets") != 1 {
		t.Errorf("within the TTL the cached answer is used: %d subnets, %d calls", len(res.Subnets), e.Calls("ec2", "DescribeSubnets"))
	}
	clk.Step(time.Minute)
	if res, err = p.List(ctx, terms); err != nil {
		t.Fatal(err)
	}
	if len(res.Subnets) != 3 || e.Calls("ec2", "DescribeSubnets") != 2 {
		t.Errorf("after the TTL EC2 is asked again: %d subnets, %d calls", len(res.Subnets), e.Calls("ec2", "DescribeSubnets"))
	}
}

func TestZonalSubnetsPreferFreeIPsAndCountInflight(t *testing.T) {
	e, p, clk := setup(t)
	ctx := context.Background()
	privA := seeded(t, e, "us-west-2a", true)
	extra := e.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 8000, Tags: discovery()})
	zonal, err := p.ZonalSubnets(ctx, []v1.SubnetSelectorTerm{{Tags: discovery()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(zonal) != 4 || zonal["us-west-2a"].ID != privA.ID {
		t.Fatalf("zone a picks %s, want %s (8187 > 8000 free)", zonal["us-west-2a"].ID, privA.ID)
	}
	p.ReserveIPs(privA.ID, 200) // launches in flight: 7987 left
	if zonal, _ = p.ZonalSubnets(ctx, []v1.SubnetSelectorTerm{{Tags: discovery()}}); zonal["us-west-2a"].ID != extra.ID {
		t.Errorf("with 200 IPs in flight zone a must pick %s, got %s", extra.ID, zonal["us-west-2a"].ID)
	}
	p.ReleaseIPs(privA.ID, 100)
	p.ReleaseIPs(privA.ID, 100)
	if zonal, _ = p.ZonalSubnets(ctx, []v1.SubnetSelectorTerm{{Tags: discovery()}}); zonal["us-west-2a"].ID != privA.ID {
		t.Errorf("released: zone a must pick %s again", privA.ID)
	}
	p.ReserveIPs(privA.ID, 200)
	clk.Step(time.Minute) // a fresh count from EC2 already holds the launched instances
	if zonal, _ = p.ZonalSubnets(ctx, []v1.SubnetSelectorTerm{{Tags: discovery()}}); zonal["us-west-2a"].ID != privA.ID {
		t.Errorf("after a refresh in-flight reservations are dropped: got %s", zonal["us-west-2a"].ID)
	}
}
