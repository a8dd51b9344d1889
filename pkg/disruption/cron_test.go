package disruption_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
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

func TestValidateBudget(t *testing.T) {
	hour := &metav1.Duration{Duration: time.Hour}
	for _, c := range []struct {
		name string
		b    v1.Budget
		want string // "" = valid
	}{
		{"count", v1.Budget{Nodes: "5"}, ""},
		{"percent", v1.Budget{Nodes: "10%"}, ""},
		{"weekdays", v1.Budget{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: hour}, ""},
		{"descriptor", v1.Budget{Nodes: "0", Schedule: ptr.To("@daily"), Duration: hour}, ""},
		{"leap day fires every four years", v1.Budget{Nodes: "0", Schedule: ptr.To("0 0 29 2 *"), Duration: hour}, ""},
		{"step zero", v1.Budget{Nodes: "0", Schedule: ptr.To("*/0 * * * *"), Duration: hour}, `minute: step "0" must be a whole number above 0`},
		{"backwards range", v1.Budget{Nodes: "0", Schedule: ptr.To("5-1 * * * *"), Duration: hour}, `minute: range "5-1" runs backwards`},
		{"never fires", v1.Budget{Nodes: "0", Schedule: ptr.To("0 0 30 2 *"), Duration: hour}, "never fires"},
		{"nodes not a number", v1.Budget{Nodes: "ten"}, `nodes "ten": must be a count`},
		{"percent above 100", v1.Budget{Nodes: "101%"}, `nodes "101%"`},
		{"schedule without duration", v1.Budget{Nodes: "1", Schedule: ptr.To("@daily")}, "schedule is set without duration"},
		{"duration without schedule", v1.Budget{Nodes: "1", Duration: hour}, "duration is set without schedule"},
		{"zero duration", v1.Budget{Nodes: "1", Schedule: ptr.To("@daily"), Duration: &metav1.Duration{}}, "must be longer than zero"},
	} {
		err := disruption.ValidateBudget(c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		// What ValidateBudget accepts, BudgetLimit can evaluate (the disruption
		// controller never fails closed on a budget validation passed).
		if c.want == "" {
			np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: []v1.Budget{c.b}}}}
			if _, _, err := disruption.BudgetLimit(np, v1.DisruptionReasonEmpty, 10, time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)); err != nil {
				t.Errorf("%s: valid budget but BudgetLimit fails: %v", c.name, err)
			}
		} else if c.b.Schedule != nil && c.b.Duration != nil && c.b.Duration.Duration > 0 && !strings.Contains(c.want, "never fires") {
			np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: []v1.Budget{c.b}}}}
			if _, _, err := disruption.BudgetLimit(np, v1.DisruptionReasonEmpty, 10, time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)); err == nil {
				t.Errorf("%s: invalid schedule but BudgetLimit evaluates it: validation and evaluation disagree", c.name)
			}
		}
	}
}
