package awsemulator_test

import (
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestDefaultOptionsAndEnv(t *testing.T) {
	c := start(t)
	o := c.e.Options()
	if o.Region != "us-west-2" || o.ClusterName != "karpenter-demo" || o.KubernetesVersion != "1.34" || o.AccountID != "123456789012" ||
		len(o.Zones) != 4 || o.Zones[0] != "us-west-2a" || o.Zones[3] != "us-west-2d" {
		t.Fatalf("defaults: %+v", o)
	}
	env := c.e.Env()
	want := []string{"AWS_ENDPOINT_URL=" + c.e.Endpoint(), "AWS_REGION=us-west-2", "AWS_ACCESS_KEY_ID=AKIAEMULATOR00000000", "AWS_SECRET_ACCESS_KEY=emulator-secret-access-key"}
	if len(env) != len(want) {
		t.Fatalf("env %v", env)
	}
	for i := range want {
		if env[i] != want[i] {
			t.Fatalf("env[%d] = %q, want %q", i, env[i], want[i])
		}
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	c := start(t)
	out, err := c.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	ok(t, err)
	var got []string
	for _, z := range out.AvailabilityZones {
		got = append(got, *z.ZoneName+"="+*z.ZoneId)
		if z.State != ec2types.AvailabilityZoneStateAvailable || *z.RegionName != "us-west-2" {
			t.Fatalf("zone %+v", z)
		}
	}
	want := "[us-west-2a=usw2-az1 us-west-2b=usw2-az2 us-west-2c=usw2-az3 us-west-2d=usw2-az4]"
	if fmtList(got) != want {
		t.Fatalf("zones %v, want %s", got, want)
	}
	out, err = c.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: []ec2types.Filter{filter("zone-id", "usw2-az3")}})
	ok(t, err)
	if len(out.AvailabilityZones) != 1 || *out.AvailabilityZones[0].ZoneName != "us-west-2c" {
		t.Fatalf("zone-id filter: %+v", out.AvailabilityZones)
	}
}

func TestCustomZonesAndRegion(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{Region: "eu-central-1", Zones: []string{"eu-central-1a", "eu-central-1b"}, ClusterName: "prod"})
	c := newClients(e)
	out, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "prod")}})
	ok(t, err)
	var zones []string
	for _, s := range out.Subnets {
		zones = append(zones, *s.AvailabilityZone+"="+*s.AvailabilityZoneId)
	}
	if fmtList(zones) != "[eu-central-1a=euc1-az1 eu-central-1b=euc1-az2]" {
		t.Fatalf("subnets of custom region: %v", zones)
	}
}

func fmtList(s []string) string {
	sort.Strings(s)
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}

func TestDescribeSubnets(t *testing.T) {
	c := start(t)
	all, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	ok(t, err)
	if len(all.Subnets) != 8 {
		t.Fatalf("want 8 subnets, got %d", len(all.Subnets))
	}

	priv, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	if len(priv.Subnets) != 4 {
		t.Fatalf("discovery-tagged subnets: %d", len(priv.Subnets))
	}
	for _, s := range priv.Subnets {
		if *s.AvailableIpAddressCount != 8187 || *s.MapPublicIpOnLaunch || !hasTag(s.Tags, "Name", "karpenter-demo-private-"+*s.AvailabilityZone) ||
			*s.VpcId == "" || *s.SubnetArn == "" || *s.OwnerId != "123456789012" {
			t.Fatalf("private subnet %+v", s)
		}
	}

	pub, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag-key", "kubernetes.io/role/elb")}})
	ok(t, err)
	if len(pub.Subnets) != 4 || *pub.Subnets[0].AvailableIpAddressCount != 251 {
		t.Fatalf("public subnets: %d", len(pub.Subnets))
	}

	// Values are ORed, filters ANDed, tag values take wildcards.
	both, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		filter("tag:Name", "karpenter-demo-p*"), filter("availability-zone", "us-west-2a", "us-west-2b"),
	}})
	ok(t, err)
	if len(both.Subnets) != 4 {
		t.Fatalf("wildcard + zone filter: %d subnets", len(both.Subnets))
	}
	byID, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("subnet-id", *priv.Subnets[0].SubnetId)}})
	ok(t, err)
	if len(byID.Subnets) != 1 || *byID.Subnets[0].SubnetId != *priv.Subnets[0].SubnetId {
		t.Fatalf("subnet-id filter: %+v", byID.Subnets)
	}
	none, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "other")}})
	ok(t, err)
	if len(none.Subnets) != 0 {
		t.Fatalf("no subnet should match: %d", len(none.Subnets))
	}

	_, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0000000000000000"}})
	expectError(t, err, "InvalidSubnetID.NotFound", 400)
	_, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("no-such-filter", "x")}})
	expectError(t, err, "InvalidParameterValue", 400)
	_, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(2)})
	expectError(t, err, "InvalidParameterValue", 400)

	// Pagination: 5 per page over 8 subnets = 2 pages, every subnet once.
	c.e.ResetCalls()
	p := ec2.NewDescribeSubnetsPaginator(c.ec2, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	seen := map[string]bool{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		for _, s := range page.Subnets {
			seen[*s.SubnetId] = true
		}
	}
	if len(seen) != 8 || c.e.Calls("ec2", "DescribeSubnets") != 2 {
		t.Fatalf("paginated %d subnets in %d calls", len(seen), c.e.Calls("ec2", "DescribeSubnets"))
	}

	// State edits are visible on the wire.
	added := c.e.AddSubnet(awsemulator.Subnet{Zone: "us-west-2b", AvailableIPs: 10, Tags: map[string]string{"karpenter.sh/discovery": "karpenter-demo"}})
	if added.ZoneID != "usw2-az2" || added.ID == "" || added.VPCID != *priv.Subnets[0].VpcId {
		t.Fatalf("added subnet defaults: %+v", added)
	}
	priv, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	if len(priv.Subnets) != 5 {
		t.Fatalf("after AddSubnet: %d", len(priv.Subnets))
	}
	if !c.e.RemoveSubnet(added.ID) || c.e.RemoveSubnet(added.ID) {
		t.Fatal("RemoveSubnet should succeed once")
	}
	priv, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	if len(priv.Subnets) != 4 {
		t.Fatalf("after RemoveSubnet: %d", len(priv.Subnets))
	}
}

func hasTag(tags []ec2types.Tag, k, v string) bool {
	for _, t := range tags {
		if *t.Key == k && *t.Value == v {
			return true
		}
	}
	return false
}

func TestDeterministicIDs(t *testing.T) {
	a, b := start(t), start(t)
	ids := func(c *clients) string {
		s, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		ok(t, err)
		g, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
		ok(t, err)
		var out []string
		for _, x := range s.Subnets {
			out = append(out, *x.SubnetId)
		}
		for _, x := range g.SecurityGroups {
			out = append(out, *x.GroupId)
		}
		return fmtList(out)
	}
	if ids(a) != ids(b) {
		t.Fatalf("IDs differ between runs:\n%s\n%s", ids(a), ids(b))
	}
}

func TestDescribeSecurityGroups(t *testing.T) {
	c := start(t)
	all, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	ok(t, err)
	if len(all.SecurityGroups) != 2 {
		t.Fatalf("want 2 groups, got %d", len(all.SecurityGroups))
	}
	tagged, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	if len(tagged.SecurityGroups) != 1 {
		t.Fatalf("tagged groups: %d", len(tagged.SecurityGroups))
	}
	sg := tagged.SecurityGroups[0]
	if *sg.GroupName != "eks-cluster-sg-karpenter-demo" || !hasTag(sg.Tags, "kubernetes.io/cluster/karpenter-demo", "owned") {
		t.Fatalf("cluster SG %+v", sg)
	}
	byName, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("group-name", "default")}})
	ok(t, err)
	if len(byName.SecurityGroups) != 1 || len(byName.SecurityGroups[0].Tags) != 0 {
		t.Fatalf("default group: %+v", byName.SecurityGroups)
	}
	byID, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("group-id", *sg.GroupId)}})
	ok(t, err)
	if len(byID.SecurityGroups) != 1 {
		t.Fatalf("group-id filter: %d", len(byID.SecurityGroups))
	}
	ids, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{*sg.GroupId}})
	ok(t, err)
	if len(ids.SecurityGroups) != 1 {
		t.Fatalf("GroupIds: %d", len(ids.SecurityGroups))
	}
	_, err = c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-404"}})
	expectError(t, err, "InvalidGroup.NotFound", 400)

	g := c.e.AddSecurityGroup(awsemulator.SecurityGroup{Name: "extra", Tags: map[string]string{"team": "a"}})
	keyed, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag-key", "team")}})
	ok(t, err)
	if len(keyed.SecurityGroups) != 1 || *keyed.SecurityGroups[0].GroupId != g.ID {
		t.Fatalf("added group: %+v", keyed.SecurityGroups)
	}
	if !c.e.RemoveSecurityGroup(g.ID) {
		t.Fatal("RemoveSecurityGroup")
	}
}
