package placementgroup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
)

func setup(t *testing.T) (*awsemulator.Emulator, *placementgroup.Provider, *clocktesting.FakeClock) {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	clk := clocktesting.NewFakeClock(time.Now())
	return e, placementgroup.NewProvider(ec2.NewFromConfig(awstest.Config(e)), clk, time.Minute), clk
}

// A selector resolves by name or by id over HTTP to the emulator, with the
// group's strategy and partition count.
func TestResolveByNameAndID(t *testing.T) {
	e, p, _ := setup(t)
	racks := e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "racks", Strategy: "partition", PartitionCount: 4})
	e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "ml", Strategy: "cluster"})
	ctx := context.Background()

	byName, err := p.Resolve(ctx, &v1.PlacementGroupSelector{Name: ptr.To("racks")})
	if err != nil {
		t.Fatal(err)
	}
	if !byName.Usable() || byName.Group.ID != racks.ID || byName.Group.Strategy != placementgroup.StrategyPartition || byName.Group.PartitionCount != 4 {
		t.Fatalf("by name: %+v", byName.Group)
	}
	byID, err := p.Resolve(ctx, &v1.PlacementGroupSelector{ID: ptr.To(racks.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if byID.Group == nil || byID.Group.Name != "racks" {
		t.Fatalf("by id: %+v", byID.Group)
	}
	if r, err := p.Resolve(ctx, nil); r != nil || err != nil {
		t.Errorf("nil selector: %v %v", r, err)
	}
}

// A name or id EC2 does not know, and a group that is not available, are
// answers naming the field, not errors.
func TestUnknownAndUnavailableGroups(t *testing.T) {
	e, p, clk := setup(t)
	ctx := context.Background()
	for _, sel := range []*v1.PlacementGroupSelector{{Name: ptr.To("nope")}, {ID: ptr.To("pg-0123456789abcdef0")}, {ID: ptr.To("not-an-id")}} {
		r, err := p.Resolve(ctx, sel)
		if err != nil {
			t.Fatalf("%s: %v", placementgroup.Describe(sel), err)
		}
		if r.Usable() || !strings.Contains(r.Problem(sel), "spec.placementGroupSelector") || !strings.Contains(r.Problem(sel), "matched no placement group") {
			t.Errorf("%s: %q", placementgroup.Describe(sel), r.Problem(sel))
		}
	}
	e.AddPlacementGroup(awsemulator.PlacementGroup{Name: "old", Strategy: "spread", State: "deleting"})
	sel := &v1.PlacementGroupSelector{Name: ptr.To("old")}
	r, err := p.Resolve(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if r.Usable() || !strings.Contains(r.Problem(sel), "is deleting, not available") {
		t.Errorf("deleting group: %q", r.Problem(sel))
	}
	// Cached for the TTL, asked again after it.
	e.SetPlacementGroupState("old", "available")
	if r, _ := p.Resolve(ctx, sel); r.Usable() {
		t.Error("answer not cached")
	}
	clk.Step(time.Minute)
	if r, _ := p.Resolve(ctx, sel); !r.Usable() {
		t.Errorf("not asked again after the TTL: %q", r.Problem(sel))
	}
}
