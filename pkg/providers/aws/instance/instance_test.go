package instance_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

var both = []string{scheduling.CapacityTypeSpot, scheduling.CapacityTypeOnDemand}
var onDemand = []string{scheduling.CapacityTypeOnDemand}

func create(t *testing.T, env *launchtest.Env, nc *awsv1.EC2NodeClass, name string, capacityTypes []string, types ...string) (*instance.Instance, error) {
	t.Helper()
	claim := launchtest.NodeClaim(name, nc, capacityTypes, types...)
	return env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), env.InstanceTypesFor(t, nc, claim))
}

func emulated(t *testing.T, em *awsemulator.Emulator, id string) awsemulator.Instance {
	t.Helper()
	for _, in := range em.Instances() {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("instance %s not in the emulator", id)
	return awsemulator.Instance{}
}

// A launch creates one launch template with the class's settings, tags the
// instance as upstream, and the next launch of the same shape reuses it.
func TestCreateUsesOneLaunchTemplatePerOptionSet(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	inst, err := create(t, env, nc, "claim-1", onDemand, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if inst.Type != "m5.large" || inst.CapacityType != "on-demand" || !strings.HasPrefix(inst.ID, "i-") || inst.Zone == "" || inst.ImageID != nc.Status.AMIs[0].ID && inst.ImageID == "" {
		t.Fatalf("instance %+v", inst)
	}
	if want := fmt.Sprintf("aws:///%s/%s", inst.Zone, inst.ID); inst.ProviderID() != want {
		t.Errorf("providerID %s, want %s", inst.ProviderID(), want)
	}
	lts := env.Emulator.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("%d launch templates, want 1", len(lts))
	}
	lt := lts[0]
	if !strings.HasPrefix(lt.Name, "karpenter.k8s.aws/") {
		t.Errorf("launch template name %q", lt.Name)
	}
	d := lt.Data
	for k, want := range map[string]string{
		"MetadataOptions.HttpTokens":              "required",
		"MetadataOptions.HttpPutResponseHopLimit": "1",
		"MetadataOptions.HttpEndpoint":            "enabled",
		"Monitoring.Enabled":                      "false",
		"IamInstanceProfile.Name":                 nc.Status.InstanceProfile,
		"BlockDeviceMapping.1.DeviceName":         "/dev/xvda",
		"BlockDeviceMapping.1.Ebs.VolumeSize":     "20",
		"BlockDeviceMapping.1.Ebs.VolumeType":     "gp3",
		"BlockDeviceMapping.1.Ebs.Encrypted":      "true",
	} {
		if d[k] != want {
			t.Errorf("launch template %s = %q, want %q", k, d[k], want)
		}
	}
	if got := lt.SecurityGroupIDs(); len(got) != len(nc.Status.SecurityGroups) || len(got) == 0 {
		t.Errorf("security groups %v, want those of %v", got, nc.Status.SecurityGroups)
	}
	ud, err := base64.StdEncoding.DecodeString(lt.UserData())
	if err != nil || !strings.Contains(string(ud), "node.eks.aws") || !strings.Contains(string(ud), env.ClusterName) {
		t.Errorf("user data is not an AL2023 NodeConfig of the cluster (%v):\n%s", err, ud)
	}
	for k, want := range map[string]string{
		"kubernetes.io/cluster/" + env.ClusterName: "owned", "eks:eks-cluster-name": env.ClusterName,
		"karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/nodepool": "default", "team": "launch",
	} {
		if lt.Tags[k] != want {
			t.Errorf("launch template tag %s = %q, want %q", k, lt.Tags[k], want)
		}
		if got := lt.TagsFor("instance")[k]; got != want {
			t.Errorf("launch template instance tag %s = %q, want %q", k, got, want)
		}
		if got := emulated(t, env.Emulator, inst.ID).Tags[k]; got != want {
			t.Errorf("instance tag %s = %q, want %q", k, got, want)
		}
	}
	if got := emulated(t, env.Emulator, inst.ID).MetadataOptions["HttpTokens"]; got != "required" {
		t.Errorf("instance metadata HttpTokens %q", got)
	}

	if _, err := create(t, env, nc, "claim-2", onDemand, "m5.large"); err != nil {
		t.Fatal(err)
	}
	if n := env.Emulator.Calls("ec2", "CreateLaunchTemplate"); n != 1 {
		t.Errorf("%d CreateLaunchTemplate calls for two launches of one shape, want 1", n)
	}
	if n := len(env.Emulator.LaunchTemplates()); n != 1 {
		t.Errorf("%d launch templates, want 1", n)
	}
}

// Concurrent launches of one shape are one CreateFleet call.
func TestCreateBatchesConcurrentLaunches(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	const n = 10
	ctx := context.Background()
	// What the CloudProvider has at hand already: instance types and subnets.
	claims := make([]*v1.NodeClaim, n)
	types := env.InstanceTypesFor(t, nc, launchtest.NodeClaim("claim", nc, both, "m5.large", "m5.xlarge", "c5.large"))
	if _, err := env.Providers.Subnets.ZonalSubnets(ctx, nc.Spec.SubnetSelectorTerms); err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		claims[i] = launchtest.NodeClaim(fmt.Sprintf("claim-%d", i), nc, both, "m5.large", "m5.xlarge", "c5.large")
	}
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := env.Instances.Create(ctx, nc, claims[i], env.Tags(nc, claims[i]), types)
			errs[i] = err
			if err == nil {
				ids[i] = inst.ID
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range ids {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("instance %s handed to two launches", ids[i])
		}
		seen[ids[i]] = true
	}
	if c := env.Emulator.Calls("ec2", "CreateFleet"); c != 1 {
		t.Errorf("%d CreateFleet calls for %d concurrent launches, want 1", c, n)
	}
	if got := len(env.Emulator.Instances()); got != n {
		t.Errorf("%d instances, want %d", got, n)
	}
}

// Spot when allowed and offered, on-demand otherwise.
func TestCapacityTypeChoice(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	spot, err := create(t, env, nc, "spot", both, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if spot.CapacityType != "spot" || emulated(t, env.Emulator, spot.ID).CapacityType != "spot" {
		t.Errorf("capacity type %s with spot allowed, want spot", spot.CapacityType)
	}
	od, err := create(t, env, nc, "od", onDemand, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if od.CapacityType != "on-demand" || emulated(t, env.Emulator, od.ID).CapacityType != "on-demand" {
		t.Errorf("capacity type %s with on-demand only", od.CapacityType)
	}
	// Reserved wins when an available reserved offering is allowed.
	it := &scheduling.InstanceType{Name: "m5.large", Offerings: []scheduling.Offering{
		{Zone: "us-west-2a", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "us-west-2a", CapacityType: "spot", Price: 0.03, Available: true},
		{Zone: "us-west-2a", CapacityType: "reserved", Price: 0.0000001, Available: true},
	}}
	all := scheduling.NewRequirements(scheduling.NewRequirement(scheduling.LabelCapacityType, "In", "reserved", "spot", "on-demand"))
	if ct := instance.CapacityType(all, []*scheduling.InstanceType{it}); ct != "reserved" {
		t.Errorf("capacity type %s with a reserved offering, want reserved", ct)
	}
	it.Offerings[2].Available = false
	if ct := instance.CapacityType(all, []*scheduling.InstanceType{it}); ct != "spot" {
		t.Errorf("capacity type %s without a reserved offering, want spot", ct)
	}
}

// Candidates: cheapest first, at most 60.
func TestCandidatesCheapestSixty(t *testing.T) {
	var its []*scheduling.InstanceType
	for i := 0; i < 100; i++ {
		its = append(its, &scheduling.InstanceType{Name: fmt.Sprintf("t%03d", i), Offerings: []scheduling.Offering{
			{Zone: "z", CapacityType: "on-demand", Price: float64(100 - i), Available: true},
		}})
	}
	got := instance.Candidates(scheduling.NewRequirements(), its, "on-demand")
	if len(got) != instance.MaxInstanceTypes || got[0].Name != "t099" || got[59].Name != "t040" {
		t.Errorf("candidates %d, first %s, last %s", len(got), got[0].Name, got[len(got)-1].Name)
	}
}

// Insufficient capacity marks the pools unavailable and is an
// InsufficientCapacityError; the next launch avoids them.
func TestInsufficientCapacity(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	for _, z := range env.Emulator.Options().Zones {
		env.Emulator.SetInsufficientCapacity("on-demand", "m5.large", z, true)
	}
	_, err := create(t, env, nc, "ice", onDemand, "m5.large")
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("error %v, want an InsufficientCapacityError", err)
	}
	if !strings.Contains(err.Error(), "InsufficientInstanceCapacity") {
		t.Errorf("error %q does not name the EC2 error", err)
	}
	for _, s := range nc.Status.Subnets {
		if !env.Unavailable.IsUnavailable("on-demand", "m5.large", s.Zone) {
			t.Errorf("on-demand m5.large in %s not marked unavailable", s.Zone)
		}
	}
	// Each failed offering counts under its zone and capacity type.
	for _, s := range nc.Status.Subnets {
		if got := testutil.ToFloat64(instance.LaunchFailures.WithLabelValues(s.Zone, s.ZoneID, "on-demand", "LaunchFailed")); got < 1 {
			t.Errorf("karpenter_cloudprovider_instance_launch_failures_total{zone=%s} %v, want at least 1", s.Zone, got)
		}
	}
	if env.Unavailable.IsUnavailable("spot", "m5.large", nc.Status.Subnets[0].Zone) {
		t.Error("spot m5.large marked unavailable too")
	}
	fleets := env.Emulator.Calls("ec2", "CreateFleet")
	// Now no offering is available: no call at all.
	if _, err := create(t, env, nc, "ice-2", onDemand, "m5.large"); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("error %v, want an InsufficientCapacityError", err)
	}
	if c := env.Emulator.Calls("ec2", "CreateFleet"); c != fleets {
		t.Errorf("CreateFleet called for offerings known to be unavailable")
	}
	// Another type is launched instead.
	inst, err := create(t, env, nc, "other", onDemand, "m5.large", "m5.xlarge")
	if err != nil || inst.Type != "m5.xlarge" {
		t.Fatalf("launch %+v, %v; want m5.xlarge", inst, err)
	}
}

// Throttled CreateFleet calls are retried by the SDK: the launch succeeds
// and launches exactly one instance.
func TestCreateRetriesRequestLimitExceeded(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	env.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "CreateFleet", Code: "RequestLimitExceeded", Count: 2})
	inst, err := create(t, env, nc, "throttled", onDemand, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if c := env.Emulator.Calls("ec2", "CreateFleet"); c != 3 {
		t.Errorf("%d CreateFleet calls, want 3 (two throttled)", c)
	}
	if got := env.Emulator.Instances(); len(got) != 1 || got[0].ID != inst.ID {
		t.Errorf("instances %v, want only %s", got, inst.ID)
	}
}

// A launch template deleted behind the cache is created again.
func TestCreateRecreatesDeletedLaunchTemplate(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	if _, err := create(t, env, nc, "first", onDemand, "m5.large"); err != nil {
		t.Fatal(err)
	}
	lt := env.Emulator.LaunchTemplates()[0]
	if _, err := env.EC2.DeleteLaunchTemplate(context.Background(), &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(lt.ID)}); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, env, nc, "second", onDemand, "m5.large"); err != nil {
		t.Fatal(err)
	}
	if c := env.Emulator.Calls("ec2", "CreateLaunchTemplate"); c != 2 {
		t.Errorf("%d CreateLaunchTemplate calls, want 2", c)
	}
}

// Get, List, Delete (batched), and a terminated instance is not found.
func TestGetListDelete(t *testing.T) {
	env := launchtest.New(t)
	ctx := context.Background()
	nc := env.NodeClass(t, "default")
	const n = 5
	var ids []string
	for i := 0; i < n; i++ {
		inst, err := create(t, env, nc, fmt.Sprintf("c-%d", i), onDemand, "m5.large")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	got, err := env.Instances.Get(ctx, ids[0])
	if err != nil || got.ID != ids[0] || got.Type != "m5.large" || got.Tags[awsv1.TagNodePool] != "default" || got.PrivateDNSName == "" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	list, err := env.Instances.List(ctx)
	if err != nil || len(list) != n {
		t.Fatalf("List: %d instances, %v; want %d", len(list), err, n)
	}
	env.Emulator.ResetCalls()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := env.Instances.Delete(ctx, id); err != nil {
				t.Errorf("Delete %s: %v", id, err)
			}
		}()
	}
	wg.Wait()
	if c := env.Emulator.Calls("ec2", "TerminateInstances"); c != 1 {
		t.Errorf("%d TerminateInstances calls for %d concurrent deletes, want 1", c, n)
	}
	if c := env.Emulator.Calls("ec2", "DescribeInstances"); c != 1 {
		t.Errorf("%d DescribeInstances calls for %d concurrent deletes, want 1", c, n)
	}
	// shutting-down, then terminated at the next look.
	for _, id := range ids {
		if err := env.Instances.Delete(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
			// The first look may still see shutting-down.
			if err != nil {
				t.Fatalf("Delete again: %v", err)
			}
			if err := env.Instances.Delete(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
				t.Fatalf("Delete of a terminated instance: %v, want NodeClaimNotFound", err)
			}
		}
		if _, err := env.Instances.Get(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get of terminated %s: %v, want NodeClaimNotFound", id, err)
		}
	}
	if list, err := env.Instances.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after termination: %d, %v", len(list), err)
	}
	if _, err := env.Instances.Get(ctx, "i-0123456789abcdef0"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of an unknown id: %v, want NodeClaimNotFound", err)
	}
}

func TestParseProviderID(t *testing.T) {
	if id, err := instance.ParseProviderID("aws:///us-west-2a/i-0abc"); err != nil || id != "i-0abc" {
		t.Errorf("got %q, %v", id, err)
	}
	for _, bad := range []string{"", "kwok://x", "aws:///us-west-2a/", "aws:///us-west-2a/vol-1"} {
		if _, err := instance.ParseProviderID(bad); err == nil || !strings.Contains(err.Error(), "aws:///<zone>/<instance-id>") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// The only subnet of a zone running out of addresses
// (InsufficientFreeAddressesInSubnet) takes the zone out of launches: every
// subnet of the class there is exhausted.
func TestSubnetOutOfAddresses(t *testing.T) {
	env := launchtest.New(t)
	sn := env.Emulator.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 1, Tags: map[string]string{"tiny": "true"}})
	nc := env.NodeClass(t, "default")
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: sn.ID}}
	env.Resolve(t, nc)
	if _, err := create(t, env, nc, "fits", onDemand, "m5.large"); err != nil {
		t.Fatal(err)
	}
	_, err := create(t, env, nc, "full", onDemand, "m5.large")
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "InsufficientFreeAddressesInSubnet") {
		t.Fatalf("error %v, want an InsufficientCapacityError for the full subnet", err)
	}
	if !env.Unavailable.IsSubnetUnavailable(sn.ID) {
		t.Fatal("subnet not marked")
	}
	for _, ct := range both {
		if !env.Unavailable.IsUnavailable(ct, "c5.large", "us-west-2a", sn.ID) {
			t.Errorf("%s offerings of us-west-2a not unavailable with its only subnet exhausted", ct)
		}
	}
	if env.Unavailable.IsUnavailable("on-demand", "m5.large", "us-west-2b", "subnet-other") {
		t.Error("another zone marked unavailable")
	}
}

// One exhausted subnet of two in a zone marks the subnet, not the zone, as
// upstream: the next launch into the zone uses its other subnet and the
// zone's offerings stay available; only the pool that failed is left out
// for UnavailableOfferingsTTL (InsufficientFreeAddressesInSubnet is one of
// upstream's unfulfillable-capacity codes). Once the zone's last subnet is
// exhausted too, the zone's offerings go, until the TTL passes.
func TestSubnetExhaustionMovesToTheZonesOtherSubnet(t *testing.T) {
	env := launchtest.New(t)
	big := env.Emulator.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 500})
	small := env.Emulator.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 400})
	other := env.Emulator.AddSubnet(awsemulator.Subnet{Zone: "us-west-2b", AvailableIPs: 400})
	nc := env.NodeClass(t, "default")
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: big.ID}, {ID: small.ID}, {ID: other.ID}}
	env.Resolve(t, nc)
	// The subnet fills up after Karpenter read its count: the launch picks it
	// (most free addresses as far as Karpenter knows) and fails.
	if err := env.Emulator.SetSubnetAvailableIPs(big.ID, 0); err != nil {
		t.Fatal(err)
	}
	inZoneA := func(name, it string) (*instance.Instance, error) {
		claim := launchtest.NodeClaim(name, nc, onDemand, it)
		claim.Spec.Requirements = append(claim.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"us-west-2a"}})
		return env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), env.InstanceTypesFor(t, nc, claim))
	}
	_, err := inZoneA("exhausted", "m5.large")
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "InsufficientFreeAddressesInSubnet") {
		t.Fatalf("error %v, want an InsufficientCapacityError for the exhausted subnet", err)
	}
	if !env.Unavailable.IsSubnetUnavailable(big.ID) || env.Unavailable.IsSubnetUnavailable(small.ID) {
		t.Fatalf("subnets marked: %s %v, %s %v; want only the exhausted one", big.ID, env.Unavailable.IsSubnetUnavailable(big.ID), small.ID, env.Unavailable.IsSubnetUnavailable(small.ID))
	}
	offering := func(it, zone string) bool {
		t.Helper()
		got, err := env.InstanceTypes.Get(context.Background(), nc, it)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range got.Offerings {
			if o.Zone == zone && o.CapacityType == "on-demand" {
				return o.Available
			}
		}
		t.Fatalf("no on-demand offering of %s in %s", it, zone)
		return false
	}
	if !offering("c5.large", "us-west-2a") || !offering("m5.xlarge", "us-west-2a") {
		t.Error("the zone's offerings went unavailable with one of its two subnets exhausted")
	}
	if offering("m5.large", "us-west-2a") {
		t.Error("the failed pool (m5.large, us-west-2a, on-demand) is still offered")
	}
	inst, err := inZoneA("next", "c5.large")
	if err != nil {
		t.Fatal(err)
	}
	if inst.Zone != "us-west-2a" || inst.SubnetID != small.ID {
		t.Fatalf("next launch in %s subnet %s, want us-west-2a subnet %s", inst.Zone, inst.SubnetID, small.ID)
	}

	// The zone's last subnet fills up too: the whole zone is out.
	if err := env.Emulator.SetSubnetAvailableIPs(small.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := inZoneA("last", "c5.xlarge"); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("error %v, want an InsufficientCapacityError", err)
	}
	if offering("m5.xlarge", "us-west-2a") || !offering("m5.xlarge", "us-west-2b") {
		t.Error("with every subnet of us-west-2a exhausted, its offerings (only) should be unavailable")
	}
	env.Clock.Step(instancetype.UnavailableOfferingsTTL)
	if !offering("m5.xlarge", "us-west-2a") || !offering("m5.large", "us-west-2a") {
		t.Error("us-west-2a still unavailable after UnavailableOfferingsTTL")
	}
}

// Without spot's service-linked role, spot is out for a while and on-demand
// is launched next.
func TestSpotServiceLinkedRole(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	env.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "CreateFleet", Code: "AuthFailure.ServiceLinkedRoleCreationNotPermitted", Count: 1})
	_, err := create(t, env, nc, "spot", both, "m5.large")
	if err == nil {
		t.Fatal("launch succeeded despite the fault")
	}
	if !env.Unavailable.IsUnavailable("spot", "m5.large", "us-west-2a") {
		t.Error("spot not marked unavailable")
	}
	inst, err := create(t, env, nc, "next", both, "m5.large")
	if err != nil || inst.CapacityType != "on-demand" {
		t.Fatalf("next launch %+v, %v; want on-demand", inst, err)
	}
}

// A reservation the class holds is used first: the launch template targets
// it and the instance is in its zone, reported as reserved.
func TestReservedLaunch(t *testing.T) {
	env := launchtest.New(t)
	env.Emulator.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0123456789abcdef0", Zone: "us-west-2b", InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", TotalInstanceCount: 1})
	nc := env.NodeClass(t, "default")
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123456789abcdef0"}}
	env.Resolve(t, nc)
	inst, err := create(t, env, nc, "reserved", []string{"reserved", "spot", "on-demand"}, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if inst.CapacityType != "reserved" || inst.CapacityReservationID != "cr-0123456789abcdef0" || inst.Zone != "us-west-2b" {
		t.Errorf("instance %+v, want reserved in cr-0123456789abcdef0 (us-west-2b)", inst)
	}
	var found bool
	for _, lt := range env.Emulator.LaunchTemplates() {
		if lt.Data["CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"] == "cr-0123456789abcdef0" {
			found = true
		}
	}
	if !found {
		t.Error("no launch template targets the reservation")
	}
	if got := emulated(t, env.Emulator, inst.ID).CapacityType; got != "on-demand" {
		t.Errorf("fleet bought %s, want on-demand (reserved capacity is on-demand in a reservation)", got)
	}
}

// A TerminateInstances EC2 refuses counts as a termination failure in the
// instance's zone, and the error reaches the caller.
func TestTerminationFailureCounted(t *testing.T) {
	env := launchtest.New(t)
	ctx := context.Background()
	nc := env.NodeClass(t, "default")
	created, err := create(t, env, nc, "doomed", onDemand, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := env.Instances.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	counter := instance.TerminationFailures.WithLabelValues(inst.Zone, inst.ZoneID)
	before := testutil.ToFloat64(counter)
	env.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "TerminateInstances", Code: "UnauthorizedOperation"})
	if err := env.Instances.Delete(ctx, inst.ID); err == nil {
		t.Fatal("Delete succeeded while TerminateInstances is refused")
	}
	if got := testutil.ToFloat64(counter); got != before+1 {
		t.Errorf("karpenter_cloudprovider_instance_termination_failures_total{zone=%s} %v, want %v", inst.Zone, got, before+1)
	}
}

// A NodeClaim marked karpenter.sh/price-overlay-applied launches in the
// order of the prices the NodeOverlays set: the fleet is prioritized, each
// override's priority its offering's (overlaid) price, so EC2 picks the type
// the overlays made cheapest, not the one it prices lowest. Unmarked, the
// same types launch lowest-price by EC2's prices.
func TestPriceOverlayLaunchesInOverlaidPriceOrder(t *testing.T) {
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	for _, marked := range []bool{false, true} {
		claim := launchtest.NodeClaim(fmt.Sprintf("claim-%t", marked), nc, onDemand, "c5.large", "m5.large")
		its := env.InstanceTypesFor(t, nc, claim)
		var overlaid []*scheduling.InstanceType
		for _, it := range its {
			c := *it
			c.Offerings = append([]scheduling.Offering(nil), it.Offerings...)
			if c.Name == "m5.large" {
				// An overlay made m5.large the cheapest by far.
				for i := range c.Offerings {
					c.Offerings[i].Price, c.Offerings[i].PriceOverlaid = 0.001, true
				}
			}
			overlaid = append(overlaid, &c)
		}
		want := "c5.large"
		if marked {
			claim.Annotations = map[string]string{v1alpha1.PriceOverlayAppliedAnnotationKey: "true"}
			want = "m5.large"
		}
		inst, err := env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), overlaid)
		if err != nil {
			t.Fatal(err)
		}
		if inst.Type != want {
			t.Errorf("marked %t: launched %s, want %s", marked, inst.Type, want)
		}
	}
}
