package disruption_test

import (
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/disruption"
)

func TestScheduleMatches(t *testing.T) {
	at := func(y int, mo time.Month, d, h, mi int) time.Time { return time.Date(y, mo, d, h, mi, 0, 0, time.UTC) }
	// 2026-03-04 is a Wednesday.
	for _, c := range []struct {
		expr string
		t    time.Time
		want bool
	}{
		{"* * * * *", at(2026, 3, 4, 10, 30), true},
		{"30 10 * * *", at(2026, 3, 4, 10, 30), true},
		{"30 10 * * *", at(2026, 3, 4, 10, 31), false},
		{"0-15 * * * *", at(2026, 3, 4, 10, 15), true},
		{"0-15 * * * *", at(2026, 3, 4, 10, 16), false},
		{"*/15 * * * *", at(2026, 3, 4, 10, 45), true},
		{"*/15 * * * *", at(2026, 3, 4, 10, 46), false},
		{"5/20 * * * *", at(2026, 3, 4, 10, 45), true},
		{"5/20 * * * *", at(2026, 3, 4, 10, 40), false},
		{"10-40/10 * * * *", at(2026, 3, 4, 10, 30), true},
		{"10-40/10 * * * *", at(2026, 3, 4, 10, 50), false},
		{"0,30 9,17 * * *", at(2026, 3, 4, 17, 30), true},
		{"0 9 * * mon-fri", at(2026, 3, 4, 9, 0), true},
		{"0 9 * * MON-FRI", at(2026, 3, 7, 9, 0), false}, // Saturday
		{"0 9 * * sat,sun", at(2026, 3, 8, 9, 0), true},
		{"0 9 * * 7", at(2026, 3, 8, 9, 0), true}, // 7 is Sunday too
		{"0 9 * * 0", at(2026, 3, 8, 9, 0), true},
		{"0 0 1 jan *", at(2026, 1, 1, 0, 0), true},
		{"0 0 1 Jan-Mar *", at(2026, 3, 1, 0, 0), true},
		{"0 0 1 jan-mar *", at(2026, 4, 1, 0, 0), false},
		{"0 0 */2 * *", at(2026, 3, 3, 0, 0), true},
		{"0 0 */2 * *", at(2026, 3, 4, 0, 0), false},
		{"0 0 ? * wed", at(2026, 3, 4, 0, 0), true},
		{"0 0 15 * ?", at(2026, 3, 15, 0, 0), true},
		// Both day fields restricted: either matches.
		{"0 0 1 * mon", at(2026, 3, 2, 0, 0), true}, // a Monday, not the 1st
		{"0 0 1 * mon", at(2026, 3, 1, 0, 0), true}, // the 1st, a Sunday
		{"0 0 1 * mon", at(2026, 3, 3, 0, 0), false},
		// A stepped star restricts: */2 day-of-week with day-of-month 1 is an OR.
		{"0 0 1 * */2", at(2026, 3, 3, 0, 0), true},  // a Tuesday (2)
		{"0 0 1 * */2", at(2026, 3, 4, 0, 0), false}, // a Wednesday (3), not the 1st
		{"@yearly", at(2026, 1, 1, 0, 0), true},
		{"@annually", at(2026, 1, 2, 0, 0), false},
		{"@monthly", at(2026, 3, 1, 0, 0), true},
		{"@weekly", at(2026, 3, 8, 0, 0), true},
		{"@weekly", at(2026, 3, 4, 0, 0), false},
		{"@daily", at(2026, 3, 4, 0, 0), true},
		{"@midnight", at(2026, 3, 4, 0, 1), false},
		{"@hourly", at(2026, 3, 4, 13, 0), true},
		{"@hourly", at(2026, 3, 4, 13, 1), false},
	} {
		s, err := disruption.ParseSchedule(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := s.Matches(c.t); got != c.want {
			t.Errorf("%q at %s: %v, want %v", c.expr, c.t.Format(time.RFC1123), got, c.want)
		}
	}
}

func TestScheduleInvalid(t *testing.T) {
	for _, expr := range []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
		"5-1 * * * *", "*/0 * * * *", "x * * * *", "@reboot", "* * * foo *", "? * * * *"} {
		if _, err := disruption.ParseSchedule(expr); err == nil {
			t.Errorf("%q parsed, want an error", expr)
		}
	}
}

func TestSchedulePrevAndWindow(t *testing.T) {
	at := func(d, h, mi, s int) time.Time { return time.Date(2026, 3, d, h, mi, s, 0, time.UTC) }
	s, _ := disruption.ParseSchedule("0 9 * * mon-fri")
	// Wednesday 4th 10:30:15: last hit Wednesday 09:00.
	hit, ok := s.Prev(at(4, 10, 30, 15), at(1, 0, 0, 0))
	if !ok || !hit.Equal(at(4, 9, 0, 0)) {
		t.Fatalf("prev %v %v", hit, ok)
	}
	// Monday 9th 08:00: last hit Friday 6th 09:00, across the weekend.
	hit, ok = s.Prev(at(9, 8, 0, 0), at(1, 0, 0, 0))
	if !ok || !hit.Equal(at(6, 9, 0, 0)) {
		t.Fatalf("prev %v %v", hit, ok)
	}
	// No hit at or after notBefore.
	if _, ok := s.Prev(at(9, 8, 0, 0), at(7, 0, 0, 0)); ok {
		t.Fatal("want no hit after the 7th before Monday 09:00")
	}
	for _, c := range []struct {
		now    time.Time
		d      time.Duration
		active bool
		end    time.Time
	}{
		{at(4, 9, 0, 0), time.Hour, true, at(4, 10, 0, 0)},
		{at(4, 9, 59, 59), time.Hour, true, at(4, 10, 0, 0)},
		{at(4, 10, 0, 0), time.Hour, false, time.Time{}},
		{at(4, 8, 59, 59), time.Hour, false, time.Time{}},
		{at(9, 8, 0, 0), 72 * time.Hour, true, at(9, 9, 0, 0)}, // Friday's window reaches Monday
		{at(7, 12, 0, 0), 24 * time.Hour, false, time.Time{}},  // Saturday noon
	} {
		active, end := s.ActiveWindow(c.now, c.d)
		if active != c.active || !end.Equal(c.end) {
			t.Errorf("now %s for %s: active %v until %s, want %v until %s", c.now, c.d, active, end, c.active, c.end)
		}
	}
}
