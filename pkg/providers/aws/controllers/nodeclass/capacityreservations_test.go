package nodeclass_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestCapacityReservationsInStatus: selected reservations appear in
// status.capacityReservations with upstream's fields, and
// CapacityReservationsReady joins Ready.
func TestCapacityReservationsInStatus(t *testing.T) {
	f := setup(t)
	end := f.clk.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a", Tags: map[string]string{"team": "ml"}})
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0b", InstanceType: "p5.48xlarge", Zone: "us-west-2b", InstanceMatchCriteria: "targeted",
		ReservationType: "capacity-block", EndDate: end, Interruptible: true, OwnerID: "210987654321"})
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0c", InstanceType: "c5.large", Zone: "us-west-2c", Tags: map[string]string{"team": "web"}})

	nc := newNodeClass("reserved")
	nc.Spec.CapacityReservationSelectorTerms = []v1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}, {ID: "cr-0b"}}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, v1.ConditionTypeCapacityReservationsReady, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")

	got := nc.Status.CapacityReservations
	if len(got) != 2 {
		t.Fatalf("status.capacityReservations %+v", got)
	}
	a, b := got[0], got[1]
	if a.ID != "cr-0a" || a.AvailabilityZone != "us-west-2a" || a.InstanceType != "m5.large" || a.OwnerID != "123456789012" ||
		a.InstanceMatchCriteria != "open" || a.ReservationType != v1.CapacityReservationTypeDefault || a.State != v1.CapacityReservationStateActive ||
		a.EndTime != nil || a.Interruptible {
		t.Errorf("cr-0a %+v", a)
	}
	if b.ID != "cr-0b" || b.OwnerID != "210987654321" || b.InstanceMatchCriteria != "targeted" || b.ReservationType != v1.CapacityReservationTypeCapacityBlock ||
		!b.Interruptible || b.EndTime == nil || !b.EndTime.Time.Equal(end) || b.State != v1.CapacityReservationStateActive {
		t.Errorf("cr-0b %+v", b)
	}

	// Within the last 40 minutes the Capacity Block is expiring.
	f.clk.SetTime(end.Add(-30 * time.Minute))
	nc = f.reconcile(t, nc)
	if s := nc.Status.CapacityReservations[1].State; s != v1.CapacityReservationStateExpiring {
		t.Errorf("cr-0b near its end: state %s, want expiring", s)
	}
}

// TestCapacityReservationTermThatMatchesNothing: the condition is False, names
// the term, and holds Ready back; the reservations that did match stay listed.
func TestCapacityReservationTermThatMatchesNothing(t *testing.T) {
	f := setup(t)
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a"})
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0d", InstanceType: "m5.large", Zone: "us-west-2a", State: "cancelled"})
	nc := newNodeClass("missing-reservation")
	nc.Spec.CapacityReservationSelectorTerms = []v1.CapacityReservationSelectorTerm{{ID: "cr-0a"}, {Tags: map[string]string{"team": "ml"}, OwnerID: "123456789012"}, {ID: "cr-0d"}}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeCapacityReservationsReady, metav1.ConditionFalse, nodeclass.ReasonCapacityReservationsNotFound,
		`capacityReservationSelectorTerms[1] matched no active capacity reservation: tags {"team":"ml"}, ownerID "123456789012"; capacityReservationSelectorTerms[2] matched no active capacity reservation: id "cr-0d"`)
	if r := nc.StatusConditions().Root(); r.IsTrue() {
		t.Errorf("Ready must not be True with an unmatched reservation term:\n%s", conditionSummary(nc))
	}
	if len(nc.Status.CapacityReservations) != 1 || nc.Status.CapacityReservations[0].ID != "cr-0a" {
		t.Errorf("status.capacityReservations %+v", nc.Status.CapacityReservations)
	}

	// Once the reservation exists (after the refresh interval) the class becomes Ready.
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0e", InstanceType: "m5.large", Zone: "us-west-2b", Tags: map[string]string{"team": "ml"}})
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0d", InstanceType: "m5.large", Zone: "us-west-2a"})
	f.clk.Step(nodeclass.CapacityReservationRefreshInterval + time.Second)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, v1.ConditionTypeCapacityReservationsReady, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	if len(nc.Status.CapacityReservations) != 3 {
		t.Errorf("status.capacityReservations %+v", nc.Status.CapacityReservations)
	}
}

// TestNoCapacityReservationTerms: the condition is True, the status list
// empty, and no DescribeCapacityReservations call is made.
func TestNoCapacityReservationTerms(t *testing.T) {
	f := setup(t)
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a"})
	nc := newNodeClass("no-reservations")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, v1.ConditionTypeCapacityReservationsReady, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	if len(nc.Status.CapacityReservations) != 0 || f.aws.Calls("ec2", "DescribeCapacityReservations") != 0 {
		t.Errorf("status %+v, calls %d", nc.Status.CapacityReservations, f.aws.Calls("ec2", "DescribeCapacityReservations"))
	}
}

// With the feature gate ReservedCapacity disabled the terms are not resolved:
// no reservations in status, and the condition is True with a reason saying
// why, so the class is Ready.
func TestCapacityReservationsWithTheGateOff(t *testing.T) {
	f := setup(t)
	f.c.DisableReservedCapacity = true
	f.aws.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a"})
	nc := newNodeClass("gate-off")
	nc.Spec.CapacityReservationSelectorTerms = []v1.CapacityReservationSelectorTerm{{ID: "cr-0a"}, {ID: "cr-0missing"}}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, nodeclass.ReasonReservedCapacityDisabled,
		"capacityReservationSelectorTerms are ignored: the feature gate ReservedCapacity is disabled")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	if len(nc.Status.CapacityReservations) != 0 {
		t.Errorf("status.capacityReservations %+v, want none", nc.Status.CapacityReservations)
	}
}
