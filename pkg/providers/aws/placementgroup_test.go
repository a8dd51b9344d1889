package aws_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// inGroup sets the class's placementGroupSelector on the API server.
func inGroup(ctx context.Context, t *testing.T, nc *awsv1.EC2NodeClass, sel *awsv1.PlacementGroupSelector) {
	t.Helper()
	nc.Spec.PlacementGroupSelector = sel
	status := nc.Status
	ExpectApplied(ctx, t, e.Client, nc)
	nc.Status = status
	ExpectStatusUpdated(ctx, t, e.Client, nc)
}

// describePlacement is the instance's placement as DescribeInstances answers it.
func describePlacement(ctx context.Context, t *testing.T, api *ec2.Client, providerID string) (groupID, zone string, partition int32) {
	t.Helper()
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	p := out.Reservations[0].Instances[0].Placement
	return ptr.Deref(p.GroupId, ""), ptr.Deref(p.AvailabilityZone, ""), ptr.Deref(p.PartitionNumber, 0)
}

func inZone(nc *v1.NodeClaim, zone string) *v1.NodeClaim {
	nc.Spec.Requirements = append(nc.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}})
	return nc
}

// A class with a cluster placement group launches into it: the launch
// template names the group, EC2 reports the instance in it, and the
// NodeClaim carries karpenter.k8s.aws/placement-group-id (no partition
// label). Once the group has an instance in us-west-2b, a launch allowed in
// every zone lands in us-west-2b too; the other zones' refusals are
// remembered for the group only, not for classes outside it. Burstable
// types, which cluster groups do not take, are not offered.
func TestLaunchIntoClusterPlacementGroup(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	pg := env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	plain := nc.DeepCopy()
	inGroup(ctx, t, nc, &awsv1.PlacementGroupSelector{Name: ptr.To("ml")})

	first, err := cp.Create(ctx, inZone(launchtest.NodeClaim("first", nc, []string{"on-demand"}, "m5.large"), "us-west-2b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Labels[awsv1.LabelPlacementGroupID]; got != pg.ID {
		t.Errorf("label %s = %q, want %s", awsv1.LabelPlacementGroupID, got, pg.ID)
	}
	if got, ok := first.Labels[awsv1.LabelPlacementGroupPartition]; ok {
		t.Errorf("cluster group NodeClaim labelled partition %q", got)
	}
	if lt := templateOf(t, env.Emulator, first.Status.ProviderID); lt.Data["Placement.GroupId"] != pg.ID || lt.Data["Placement.PartitionNumber"] != "" {
		t.Errorf("launch template placement %v", lt.Data)
	}
	if group, zone, _ := describePlacement(ctx, t, env.EC2, first.Status.ProviderID); group != pg.ID || zone != "us-west-2b" {
		t.Errorf("instance in group %q zone %q", group, zone)
	}

	second, err := cp.Create(ctx, launchtest.NodeClaim("second", nc, []string{"on-demand"}, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if _, zone, _ := describePlacement(ctx, t, env.EC2, second.Status.ProviderID); zone != "us-west-2b" || second.Labels[corev1.LabelTopologyZone] != "us-west-2b" {
		t.Errorf("second launch of the cluster group in %s (label %s), want us-west-2b", zone, second.Labels[corev1.LabelTopologyZone])
	}

	offering := func(its []*scheduling.InstanceType, name, zone string) *scheduling.Offering {
		for _, it := range its {
			if it.Name != name {
				continue
			}
			for i := range it.Offerings {
				if o := &it.Offerings[i]; o.Zone == zone && o.CapacityType == "on-demand" {
					return o
				}
			}
		}
		return nil
	}
	grouped, err := env.InstanceTypes.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if o := offering(grouped, "m5.large", "us-west-2a"); o == nil || o.Available {
		t.Errorf("m5.large in us-west-2a for the cluster group: %+v, want unavailable", o)
	}
	if o := offering(grouped, "t3.large", "us-west-2b"); o != nil {
		t.Errorf("burstable t3.large offered for a cluster group")
	}
	outside, err := env.InstanceTypes.List(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if o := offering(outside, "m5.large", "us-west-2a"); o == nil || !o.Available {
		t.Errorf("m5.large in us-west-2a for a class without a group: %+v, want available", o)
	}
	if o := offering(outside, "t3.large", "us-west-2b"); o == nil {
		t.Errorf("t3.large not offered to a class without a group")
	}
}

// A partition group's offerings come one per partition, each requiring
// karpenter.k8s.aws/placement-group-partition; a NodeClaim that asks for
// partition 2 launches there (the template's Placement.PartitionNumber) and
// is labelled 2; one that says nothing of partitions lands where EC2 puts it
// and is labelled with that partition.
func TestLaunchIntoPartitionPlacementGroup(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	pg := env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "racks", Strategy: "partition", PartitionCount: 3})
	inGroup(ctx, t, nc, &awsv1.PlacementGroupSelector{ID: ptr.To(pg.ID)})

	its, err := env.InstanceTypes.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]bool{}
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Zone != "us-west-2a" || o.CapacityType != "on-demand" {
				continue
			}
			r, ok := o.Requirements.Get(awsv1.LabelPlacementGroupPartition)
			if v, single := r.Single(); ok && single {
				partitions[v] = true
			}
		}
	}
	if len(partitions) != 3 || !partitions["1"] || !partitions["2"] || !partitions["3"] {
		t.Errorf("m5.large on-demand offerings in us-west-2a by partition: %v, want 1, 2, 3", partitions)
	}

	claim := launchtest.NodeClaim("p2", nc, []string{"on-demand"}, "m5.large")
	claim.Spec.Requirements = append(claim.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "3"}})
	p2, err := cp.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if lt := templateOf(t, env.Emulator, p2.Status.ProviderID); lt.Data["Placement.PartitionNumber"] != "2" || lt.Data["Placement.GroupId"] != pg.ID {
		t.Errorf("launch template placement %v, want partition 2 of %s", lt.Data, pg.ID)
	}
	if _, _, partition := describePlacement(ctx, t, env.EC2, p2.Status.ProviderID); partition != 2 {
		t.Errorf("instance in partition %d, want 2", partition)
	}
	if p2.Labels[awsv1.LabelPlacementGroupPartition] != "2" || p2.Labels[awsv1.LabelPlacementGroupID] != pg.ID {
		t.Errorf("labels %v", p2.Labels)
	}

	unpinned, err := cp.Create(ctx, launchtest.NodeClaim("any", nc, []string{"on-demand"}, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, partition := describePlacement(ctx, t, env.EC2, unpinned.Status.ProviderID)
	if partition == 0 || unpinned.Labels[awsv1.LabelPlacementGroupPartition] != strconv.Itoa(int(partition)) {
		t.Errorf("EC2 chose partition %d, NodeClaim labelled %q", partition, unpinned.Labels[awsv1.LabelPlacementGroupPartition])
	}
	got, err := cp.Get(ctx, unpinned.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[awsv1.LabelPlacementGroupID] != pg.ID || got.Labels[awsv1.LabelPlacementGroupPartition] != unpinned.Labels[awsv1.LabelPlacementGroupPartition] {
		t.Errorf("Get labels %v", got.Labels)
	}
}

// A selector that matches no available group refuses the launch with a
// CreateError naming spec.placementGroupSelector (the NodeClaim's launch
// failure and event); nothing is launched outside the group.
func TestPlacementGroupRefusalsReachTheNodeClaim(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "old", Strategy: "spread", State: "deleting"})
	for _, c := range []struct {
		sel     *awsv1.PlacementGroupSelector
		message string
	}{
		{&awsv1.PlacementGroupSelector{Name: ptr.To("missing")}, `spec.placementGroupSelector: name "missing" matched no placement group`},
		{&awsv1.PlacementGroupSelector{Name: ptr.To("old")}, "spec.placementGroupSelector: placement group old"},
	} {
		inGroup(ctx, t, nc, c.sel)
		_, err := cp.Create(ctx, launchtest.NodeClaim("refused", nc, []string{"on-demand"}, "m5.large"))
		var ce *cloudprovider.CreateError
		if !errors.As(err, &ce) || ce.ConditionReason != instance.ReasonPlacementGroupNotFound || !strings.Contains(ce.ConditionMessage, c.message) {
			t.Errorf("Create with %v: %v, want a CreateError %s containing %q", c.sel, err, instance.ReasonPlacementGroupNotFound, c.message)
		}
	}
	if n := len(env.Emulator.Instances()); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}

// When the selector resolves to another group (the name now belongs to a
// group created again), the NodeClaim drifts with PlacementGroupDrift; while
// it resolves to the instance's group it does not.
func TestPlacementGroupDrift(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	inGroup(ctx, t, nc, &awsv1.PlacementGroupSelector{Name: ptr.To("ml")})
	claim, err := cp.Create(ctx, launchtest.NodeClaim("drift", nc, []string{"on-demand"}, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	claim.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}
	drift := aws.NewDrift(e.Client, env.Instances, env.InstanceTypes)
	drift.SetPlacementGroups(env.Providers.PlacementGroups)
	if reason, err := drift.IsDrifted(ctx, claim); err != nil || reason != "" {
		t.Fatalf("drift right after launch: %q %v", reason, err)
	}
	env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"}) // a new group of the same name
	env.Clock.Step(time.Minute)
	if reason, err := drift.IsDrifted(ctx, claim); err != nil || reason != aws.PlacementGroupDrift {
		t.Errorf("drift after the selector resolves to another group: %q %v, want %s", reason, err, aws.PlacementGroupDrift)
	}
}

// A spread group holds seven instances per zone: the eighth launch in the
// zone fails for lack of capacity, and the zone is then unavailable to the
// group for every instance type, not to classes outside the group.
func TestSpreadPlacementGroupLimit(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	env.Emulator.AddPlacementGroup(awsemulator.PlacementGroup{Name: "apart", Strategy: "spread"})
	plain := nc.DeepCopy()
	inGroup(ctx, t, nc, &awsv1.PlacementGroupSelector{Name: ptr.To("apart")})
	for i := 0; i < 7; i++ {
		if _, err := cp.Create(ctx, inZone(launchtest.NodeClaim("spread-"+strconv.Itoa(i), nc, []string{"on-demand"}, "m5.large"), "us-west-2a")); err != nil {
			t.Fatalf("launch %d: %v", i, err)
		}
	}
	_, err := cp.Create(ctx, inZone(launchtest.NodeClaim("eighth", nc, []string{"on-demand"}, "m5.large"), "us-west-2a"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("eighth launch in the zone: %v, want insufficient capacity", err)
	}
	available := func(its []*scheduling.InstanceType, name string) bool {
		for _, it := range its {
			for i := range it.Offerings {
				if o := &it.Offerings[i]; it.Name == name && o.Zone == "us-west-2a" && o.CapacityType == "on-demand" {
					return o.Available
				}
			}
		}
		return false
	}
	grouped, err := env.InstanceTypes.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	outside, err := env.InstanceTypes.List(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m5.large", "c5.xlarge"} {
		if available(grouped, name) {
			t.Errorf("%s in us-west-2a still available to the full spread group", name)
		}
		if !available(outside, name) {
			t.Errorf("%s in us-west-2a unavailable to a class outside the group", name)
		}
	}
}
