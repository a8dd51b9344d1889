package instancetype

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestUnavailableOfferingsExpireAfterTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u := NewUnavailableOfferings(clk)
	seq0 := u.SeqNum()
	u.MarkUnavailable("spot", "m5.large", "us-west-2a")
	if !u.IsUnavailable("spot", "m5.large", "us-west-2a") {
		t.Fatal("marked offering is available")
	}
	for _, other := range [][3]string{{"on-demand", "m5.large", "us-west-2a"}, {"spot", "m5.large", "us-west-2b"}, {"spot", "m5.xlarge", "us-west-2a"}} {
		if u.IsUnavailable(other[0], other[1], other[2]) {
			t.Errorf("%v unavailable, only spot/m5.large/us-west-2a was marked", other)
		}
	}
	seq1 := u.SeqNum()
	if seq1 == seq0 {
		t.Fatal("marking did not change the sequence number")
	}
	clk.Step(UnavailableOfferingsTTL - time.Second)
	if !u.IsUnavailable("spot", "m5.large", "us-west-2a") || u.SeqNum() != seq1 {
		t.Fatal("entry expired (or seq changed) before the TTL")
	}
	clk.Step(time.Second)
	if u.IsUnavailable("spot", "m5.large", "us-west-2a") {
		t.Fatal("entry still unavailable after the TTL")
	}
	if u.SeqNum() == seq1 {
		t.Fatal("expiry did not change the sequence number, cached offerings would stay unavailable")
	}
}

func TestUnavailableCapacityType(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	u := NewUnavailableOfferings(clk)
	u.MarkCapacityTypeUnavailable("spot")
	if !u.IsUnavailable("spot", "c5.large", "us-west-2c") {
		t.Fatal("spot offering available although spot was marked unavailable")
	}
	if u.IsUnavailable("on-demand", "c5.large", "us-west-2c") {
		t.Fatal("on-demand unavailable although only spot was marked")
	}
	u.MarkUnavailable("on-demand", "c5.large", "us-west-2c")
	seq := u.SeqNum()
	u.Delete("on-demand", "c5.large", "us-west-2c")
	if u.IsUnavailable("on-demand", "c5.large", "us-west-2c") || u.SeqNum() == seq {
		t.Fatal("Delete did not make the offering available and change the sequence number")
	}
}

// Capacity a placement group ran out of is unavailable in that group only:
// group-wide, for one partition, or for every type of a zone (a full spread
// group); never for other groups or launches outside groups.
func TestUnavailableInPlacementGroup(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u := NewUnavailableOfferings(clk)
	u.MarkUnavailableInGroup("pg-a", "", "on-demand", "m5.large", "us-west-2a")
	u.MarkUnavailableInGroup("pg-p", "2", "on-demand", "m5.large", "us-west-2a")
	u.MarkZoneUnavailableInGroup("pg-s", "on-demand", "us-west-2b")
	for _, c := range []struct {
		group, partition, it, zone string
		want                       bool
	}{
		{"pg-a", "", "m5.large", "us-west-2a", true},
		{"pg-a", "3", "m5.large", "us-west-2a", true},
		{"pg-a", "", "m5.large", "us-west-2b", false},
		{"pg-b", "", "m5.large", "us-west-2a", false},
		{"", "", "m5.large", "us-west-2a", false},
		{"pg-p", "2", "m5.large", "us-west-2a", true},
		{"pg-p", "1", "m5.large", "us-west-2a", false},
		{"pg-p", "", "m5.large", "us-west-2a", false},
		{"pg-s", "", "c5.xlarge", "us-west-2b", true},
		{"pg-s", "", "c5.xlarge", "us-west-2a", false},
	} {
		if got := u.IsUnavailableInGroup(c.group, c.partition, "on-demand", c.it, c.zone); got != c.want {
			t.Errorf("%+v: unavailable %v", c, got)
		}
	}
	if u.IsUnavailable("on-demand", "m5.large", "us-west-2a") {
		t.Error("a group's mark made the offering unavailable outside the group")
	}
	clk.Step(UnavailableOfferingsTTL)
	if u.IsUnavailableInGroup("pg-a", "", "on-demand", "m5.large", "us-west-2a") {
		t.Error("group mark did not expire")
	}
}
