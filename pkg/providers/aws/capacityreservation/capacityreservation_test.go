package capacityreservation_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

func setup(t *testing.T, opts ...capacityreservation.Option) (*awsemulator.Emulator, *capacityreservation.Provider, *clocktesting.FakeClock) {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	clk := clocktesting.NewFakeClock(time.Now())
	return e, capacityreservation.NewProvider(ec2.NewFromConfig(awstest.Config(e)), clk, time.Minute, opts...), clk
}

func ids(rs []capacityreservation.Reservation) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// seed adds three active reservations and one cancelled one.
func seed(e *awsemulator.Emulator) {
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-west-2a", Tags: map[string]string{"team": "ml"}})
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0b", InstanceType: "p5.48xlarge", Zone: "us-west-2b", InstanceMatchCriteria: "targeted",
		ReservationType: "capacity-block", OwnerID: "210987654321", Tags: map[string]string{"team": "ml", "kind": "block"}})
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0c", InstanceType: "c5.large", Zone: "us-west-2a"})
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0d", InstanceType: "c5.large", Zone: "us-west-2a", State: "cancelled", Tags: map[string]string{"team": "ml"}})
}

func TestTermsAreORedAndFieldsANDed(t *testing.T) {
	e, p, _ := setup(t)
	seed(e)
	cases := []struct {
		name      string
		terms     []v1.CapacityReservationSelectorTerm
		want      []string
		unmatched []int
	}{
		{"tags skip cancelled", []v1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}, []string{"cr-0a", "cr-0b"}, nil},
		{"tags and owner ANDed", []v1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "*"}, OwnerID: "210987654321"}}, []string{"cr-0b"}, nil},
		{"instanceMatchCriteria", []v1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}}, []string{"cr-0a", "cr-0c"}, nil},
		{"ids ORed with tags", []v1.CapacityReservationSelectorTerm{{ID: "cr-0c"}, {Tags: map[string]string{"kind": "block"}}}, []string{"cr-0b", "cr-0c"}, nil},
		{"missing and cancelled ids", []v1.CapacityReservationSelectorTerm{{ID: "cr-0a"}, {ID: "cr-missing"}, {ID: "cr-0d"}}, []string{"cr-0a"}, []int{1, 2}},
		{"unmatched tags", []v1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web"}}}, nil, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := p.List(context.Background(), tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(res.Reservations), tc.want) || !slices.Equal(res.Unmatched, tc.unmatched) {
				t.Errorf("got %v unmatched %v, want %v unmatched %v", ids(res.Reservations), res.Unmatched, tc.want, tc.unmatched)
			}
		})
	}
	res, _ := p.List(context.Background(), []v1.CapacityReservationSelectorTerm{{ID: "cr-0a"}, {Tags: map[string]string{"team": "web"}, OwnerID: "123456789012"}})
	want := `capacityReservationSelectorTerms[1] matched no active capacity reservation: tags {"team":"web"}, ownerID "123456789012"`
	if res.UnmatchedMessage() != want {
		t.Errorf("message %q, want %q", res.UnmatchedMessage(), want)
	}
}

func TestStatusAndExpiring(t *testing.T) {
	e, p, clk := setup(t)
	end := clk.Now().Add(time.Hour).Truncate(time.Second)
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0b", InstanceType: "p5.48xlarge", Zone: "us-west-2b", InstanceMatchCriteria: "targeted",
		ReservationType: "capacity-block", EndDate: end, Interruptible: true, TotalInstanceCount: 2})
	res, err := p.List(context.Background(), []v1.CapacityReservationSelectorTerm{{ID: "cr-0b"}})
	if err != nil || len(res.Reservations) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	r := res.Reservations[0]
	s := r.Status(clk.Now())
	if s.ID != "cr-0b" || s.AvailabilityZone != "us-west-2b" || s.InstanceType != "p5.48xlarge" || s.OwnerID != "123456789012" ||
		s.InstanceMatchCriteria != "targeted" || s.ReservationType != v1.CapacityReservationTypeCapacityBlock || !s.Interruptible ||
		s.State != v1.CapacityReservationStateActive || s.EndTime == nil || !s.EndTime.Time.Equal(end) || r.AvailableInstanceCount != 2 {
		t.Errorf("status %+v (available %d)", s, r.AvailableInstanceCount)
	}
	if st := r.State(end.Add(-capacityreservation.ExpirationBuffer)); st != v1.CapacityReservationStateExpiring {
		t.Errorf("at the buffer: %s", st)
	}
	if st := r.State(end.Add(-capacityreservation.ExpirationBuffer - time.Second)); st != v1.CapacityReservationStateActive {
		t.Errorf("before the buffer: %s", st)
	}
}

func TestCachedAndPaged(t *testing.T) {
	e, p, clk := setup(t, capacityreservation.WithPageSize(1))
	seed(e)
	terms := []v1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}}
	e.ResetCalls()
	for range 3 {
		res, err := p.List(context.Background(), terms)
		if err != nil || len(res.Reservations) != 2 {
			t.Fatalf("%v %v", res, err)
		}
	}
	// Two reservations with one per page: two pages (the second says there is no more).
	if n := e.Calls("ec2", "DescribeCapacityReservations"); n != 2 {
		t.Errorf("calls within the TTL = %d, want 2 (one paged query)", n)
	}
	clk.Step(time.Minute + time.Second)
	e.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-0e", InstanceType: "m5.large", Zone: "us-west-2c"})
	res, err := p.List(context.Background(), terms)
	if err != nil || !strings.Contains(strings.Join(ids(res.Reservations), ","), "cr-0e") {
		t.Errorf("after the TTL: %v %v", ids(res.Reservations), err)
	}
}
