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
