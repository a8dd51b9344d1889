package instancetype_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func reservedOf(it *scheduling.InstanceType) []scheduling.Offering {
	var out []scheduling.Offering
	for _, o := range it.Offerings {
		if o.CapacityType == scheduling.CapacityTypeReserved {
			out = append(out, o)
		}
	}
	return out
}

// The class's active reservations become reserved offerings of their type in
// their zone, priced near zero and labelled with the reservation; expiring
// ones and ones outside the class's zones are not usable.
func TestReservedOfferings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var zoneA, zoneB string
	nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		zoneA, zoneB = nc.Status.Subnets[0].Zone, nc.Status.Subnets[1].Zone
		nc.Status.Subnets = nc.Status.Subnets[:2]
		nc.Status.CapacityReservations = []awsv1.CapacityReservation{
			{ID: "cr-0b", AvailabilityZone: zoneB, InstanceType: "m5.large", OwnerID: "123456789012", InstanceMatchCriteria: "targeted",
				ReservationType: awsv1.CapacityReservationTypeCapacityBlock, Interruptible: true, State: awsv1.CapacityReservationStateActive},
			{ID: "cr-0a", AvailabilityZone: zoneA, InstanceType: "m5.large", OwnerID: "123456789012", InstanceMatchCriteria: "open",
				ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
			{ID: "cr-0e", AvailabilityZone: zoneA, InstanceType: "c5.large", OwnerID: "123456789012", State: awsv1.CapacityReservationStateExpiring},
			{ID: "cr-0z", AvailabilityZone: "us-west-2z", InstanceType: "c5.large", OwnerID: "123456789012", State: awsv1.CapacityReservationStateActive},
		}
	})
	its, err := f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	types := byName(its)
	m5 := types["m5.large"]
	reserved := reservedOf(m5)
	if len(reserved) != 2 {
		t.Fatalf("m5.large reserved offerings %+v", reserved)
	}
	od, _ := f.prices.OnDemandPrice("m5.large")
	a, b := reserved[0], reserved[1]
	if a.Zone != zoneA || !a.Available || a.Price != od*instancetype.ReservedPriceFactor || a.Price <= 0 || a.Price >= 1e-6 ||
		!a.Requirements.Has(awsv1.LabelCapacityReservationID, "cr-0a") || a.Requirements.Has(awsv1.LabelCapacityReservationID, "cr-0b") ||
		!a.Requirements.Has(awsv1.LabelCapacityReservationType, "default") || !a.Requirements.Has(awsv1.LabelCapacityReservationInterruptible, "false") {
		t.Errorf("cr-0a offering %+v %s", a, a.Requirements.String())
	}
	if b.Zone != zoneB || !b.Available || !b.Requirements.Has(awsv1.LabelCapacityReservationID, "cr-0b") ||
		!b.Requirements.Has(awsv1.LabelCapacityReservationType, "capacity-block") || !b.Requirements.Has(awsv1.LabelCapacityReservationInterruptible, "true") {
		t.Errorf("cr-0b offering %+v %s", b, b.Requirements.String())
	}
	// The type's own requirements admit reserved capacity and both reservations.
	for _, want := range [][2]string{{scheduling.LabelCapacityType, "reserved"}, {scheduling.LabelCapacityType, "on-demand"},
		{awsv1.LabelCapacityReservationID, "cr-0a"}, {awsv1.LabelCapacityReservationID, "cr-0b"}} {
		if !m5.Requirements.Has(want[0], want[1]) {
			t.Errorf("m5.large requirements lack %s=%s: %s", want[0], want[1], m5.Requirements.String())
		}
	}
	// Its on-demand and spot offerings are in no reservation.
	for _, o := range m5.Offerings {
		if o.CapacityType != scheduling.CapacityTypeReserved {
			if r, ok := o.Requirements.Get(awsv1.LabelCapacityReservationID); !ok || r.Operator() != corev1.NodeSelectorOpDoesNotExist {
				t.Errorf("%s offering in %s: reservation id requirement %s", o.CapacityType, o.Zone, o.Requirements.String())
			}
		}
	}
	// c5.large: the expiring reservation is offered but unavailable; the one
	// outside the class's zones is not offered.
	if c5 := reservedOf(types["c5.large"]); len(c5) != 1 || c5[0].Available || !c5[0].Requirements.Has(awsv1.LabelCapacityReservationID, "cr-0e") {
		t.Errorf("c5.large reserved offerings %+v", c5)
	}
	// Types without reservations are unchanged: no reserved capacity type.
	if m5x := types["m5.xlarge"]; len(reservedOf(m5x)) != 0 || m5x.Requirements.Has(scheduling.LabelCapacityType, "reserved") {
		t.Errorf("m5.xlarge: %s", m5x.Requirements.String())
	}

	// Marked unavailable (e.g. ReservationCapacityExceeded), the reserved offering is unavailable.
	f.unavailable.MarkUnavailable(scheduling.CapacityTypeReserved, "m5.large", zoneA)
	its, err = f.provider.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if r := reservedOf(byName(its)["m5.large"]); r[0].Available || !r[1].Available {
		t.Errorf("after marking %s unavailable: %+v", zoneA, r)
	}

	// A class without reservations gets none (the cache key sees status.capacityReservations).
	plain := f.nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nc.Status.Subnets[:2] })
	its, err = f.provider.List(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if r := reservedOf(byName(its)["m5.large"]); len(r) != 0 {
		t.Errorf("class without reservations: %+v", r)
	}
}

// With the feature gate ReservedCapacity disabled the class's reservations
// give no reserved offerings, and types' requirements do not admit reserved
// capacity: Karpenter launches on-demand and spot only, as upstream.
func TestReservedCapacityGateOff(t *testing.T) {
	f := newFixture(t)
	cfg := f.em.AWSConfig()
	off := instancetype.NewProvider(ec2.NewFromConfig(cfg), f.prices, f.unavailable, f.clock,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075, DisableReservedCapacity: true})
	nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-0a", AvailabilityZone: nc.Status.Subnets[0].Zone,
			InstanceType: "m5.large", OwnerID: "123456789012", InstanceMatchCriteria: "open", State: awsv1.CapacityReservationStateActive}}
	})
	on, err := f.provider.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(reservedOf(byName(on)["m5.large"])) != 1 {
		t.Fatal("with the gate on the reservation is offered")
	}
	its, err := off.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	m5 := byName(its)["m5.large"]
	if r := reservedOf(m5); len(r) != 0 {
		t.Errorf("reserved offerings with ReservedCapacity=false: %+v", r)
	}
	if m5.Requirements.Has(scheduling.LabelCapacityType, scheduling.CapacityTypeReserved) {
		t.Errorf("requirements admit reserved capacity: %s", m5.Requirements.String())
	}
}

// Reserved offerings carry their reservation's free slots as the counts tell
// them, and a list built before a count moved is rebuilt: a full reservation
// stays available (healthy) but is not launchable; one the counts do not know
// is taken as full.
func TestReservedOfferingsCarryFreeSlots(t *testing.T) {
	f := newFixture(t)
	cfg := f.em.AWSConfig()
	counts := capacityreservation.NewAvailability()
	p := instancetype.NewProvider(ec2.NewFromConfig(cfg), f.prices, f.unavailable, f.clock,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075, ReservationCounts: counts})
	nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-0a", AvailabilityZone: nc.Status.Subnets[0].Zone,
			InstanceType: "m5.large", OwnerID: "123456789012", InstanceMatchCriteria: "open", State: awsv1.CapacityReservationStateActive}}
	})
	reserved := func() scheduling.Offering {
		t.Helper()
		its, err := p.List(context.Background(), nc)
		if err != nil {
			t.Fatal(err)
		}
		r := reservedOf(byName(its)["m5.large"])
		if len(r) != 1 {
			t.Fatalf("reserved offerings %+v", r)
		}
		return r[0]
	}
	if o := reserved(); o.ReservationID != "cr-0a" || o.ReservationCapacity != 0 || !o.Available || o.Launchable() {
		t.Errorf("unknown count: %+v, want full (available, not launchable)", o)
	}
	counts.Set("cr-0a", 2)
	if o := reserved(); o.ReservationCapacity != 2 || !o.Launchable() {
		t.Errorf("after EC2 told 2 free: %+v", o)
	}
	counts.MarkLaunched("cr-0a")
	counts.MarkLaunched("cr-0a")
	if o := reserved(); o.ReservationCapacity != 0 || o.Launchable() {
		t.Errorf("after two launches: %+v, want full", o)
	}
	counts.MarkTerminated("cr-0a", "i-1")
	counts.MarkTerminated("cr-0a", "i-1")
	if o := reserved(); o.ReservationCapacity != 1 {
		t.Errorf("after one termination reported twice: %d free, want 1", o.ReservationCapacity)
	}
}
