package disruption

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed 5-field cron expression (minute hour day-of-month month
// day-of-week), evaluated in UTC, as NodePool budgets use it. Fields accept
// numbers, `*`, ranges `a-b`, lists `a,b`, steps `*/n`, `a/n` and `a-b/n`, month
// names jan..dec, weekday names sun..sat (0 or 7 is Sunday) and `?` for `*` in
// the two day fields. The descriptors @yearly, @annually, @monthly, @weekly,
// @daily, @midnight and @hourly stand for their usual expressions.
//
// Day matching follows cron: when both day-of-month and day-of-week are
// restricted, a day matches if either does; when one is `*` only the other
// counts.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

type fieldSpec struct {
	name     string
	min, max int
	names    map[string]int
	question bool
}

var fields = []fieldSpec{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31, question: true},
	{name: "month", min: 1, max: 12, names: monthNames},
	{name: "day-of-week", min: 0, max: 7, names: dayNames, question: true},
}

// ParseSchedule parses a cron expression.
func ParseSchedule(expr string) (*Schedule, error) {
	s := strings.TrimSpace(expr)
	if strings.HasPrefix(s, "@") {
		d, ok := descriptors[strings.ToLower(s)]
		if !ok {
			return nil, fmt.Errorf("schedule %q: unknown descriptor", expr)
		}
		s = d
	}
	parts := strings.Fields(s)
	if len(parts) != 5 {
		return nil, fmt.Errorf("schedule %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", expr, len(parts))
	}
	out := &Schedule{}
	dst := []*uint64{&out.minute, &out.hour, &out.dom, &out.month, &out.dow}
	for i, p := range parts {
		bits, star, err := parseField(p, fields[i])
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %w", expr, err)
		}
		*dst[i] = bits
		switch i {
		case 2:
			out.domStar = star
		case 4:
			out.dowStar = star
		}
	}
	// 7 is another name for Sunday.
	if out.dow&(1<<7) != 0 {
		out.dow |= 1
		out.dow &^= 1 << 7
	}
	return out, nil
}

// parseField returns the field's values as a bitset and whether it is an
// unrestricted `*` or `?` (a stepped star is a restriction).
func parseField(f string, spec fieldSpec) (uint64, bool, error) {
	var bits uint64
	star := false
	for _, item := range strings.Split(f, ",") {
		rng, stepStr, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n <= 0 {
				return 0, false, fmt.Errorf("%s: step %q must be a whole number above 0", spec.name, stepStr)
			}
			step = n
		}
		lo, hi := spec.min, spec.max
		switch {
		case rng == "*" || (rng == "?" && spec.question):
			if spec.name == "day-of-week" {
				hi = 6
			}
			if !hasStep && len(f) == len(item) {
				star = true
			}
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, spec); err != nil {
				return 0, false, err
			}
			if isRange {
				if hi, err = value(b, spec); err != nil {
					return 0, false, err
				}
			} else if !hasStep {
				hi = lo
			} else if spec.name == "day-of-week" {
				hi = 6
			}
			if lo > hi {
				return 0, false, fmt.Errorf("%s: range %q runs backwards", spec.name, rng)
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, star, nil
}

func value(s string, spec fieldSpec) (int, error) {
	if spec.names != nil {
		if v, ok := spec.names[strings.ToLower(s)]; ok {
			return v, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", spec.name, s)
	}
	if v < spec.min || v > spec.max {
		return 0, fmt.Errorf("%s: %d out of range %d-%d", spec.name, v, spec.min, spec.max)
	}
	return v, nil
}

func (s *Schedule) dayMatches(t time.Time) bool {
	if s.month&(1<<uint(t.Month())) == 0 {
		return false
	}
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Matches reports whether the minute containing t is a hit.
func (s *Schedule) Matches(t time.Time) bool {
	t = t.UTC()
	return s.dayMatches(t) && s.hour&(1<<uint(t.Hour())) != 0 && s.minute&(1<<uint(t.Minute())) != 0
}

// Prev returns the latest hit at or before t (at a whole minute, UTC) that is
// not before notBefore, and whether there is one.
func (s *Schedule) Prev(t, notBefore time.Time) (time.Time, bool) {
	t = t.UTC().Truncate(time.Minute)
	today := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	for day := today; !day.Add(24*time.Hour - time.Nanosecond).Before(notBefore); day = day.AddDate(0, 0, -1) {
		if !s.dayMatches(day) {
			continue
		}
		isToday := day.Equal(today)
		maxHour := 23
		if isToday {
			maxHour = t.Hour()
		}
		for h := maxHour; h >= 0; h-- {
			if s.hour&(1<<uint(h)) == 0 {
				continue
			}
			maxMinute := 59
			if isToday && h == t.Hour() {
				maxMinute = t.Minute()
			}
			for m := maxMinute; m >= 0; m-- {
				if s.minute&(1<<uint(m)) == 0 {
					continue
				}
				hit := day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
				if hit.Before(notBefore) {
					return time.Time{}, false
				}
				return hit, true
			}
		}
	}
	return time.Time{}, false
}

// ActiveWindow reports whether a window of the given duration opened by a hit
// contains now (hit <= now < hit+duration), and when that window ends.
func (s *Schedule) ActiveWindow(now time.Time, d time.Duration) (bool, time.Time) {
	if d <= 0 {
		return false, time.Time{}
	}
	// A hit exactly d before now has just closed its window.
	hit, ok := s.Prev(now, now.Add(-d+time.Nanosecond))
	if !ok {
		return false, time.Time{}
	}
	return true, hit.Add(d)
}
