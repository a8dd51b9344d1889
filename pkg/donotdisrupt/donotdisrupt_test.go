package donotdisrupt

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

func TestEvaluate(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Hour)
	pod := func(v string, started bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: v}}}
		if started {
			p.Status.StartTime = &metav1.Time{Time: start}
		}
		return p
	}
	for _, c := range []struct {
		value   string
		started bool
		active  bool
		reason  string
	}{
		{"true", true, true, ""},
		{"2h", true, true, ReasonUntil},
		{"30m", true, false, ReasonGracePeriodElapsed},
		{"2h", false, true, ""},
		{"false", true, false, ReasonInvalid},
		{"-5m", true, false, ReasonInvalid},
		{"0", true, false, ReasonInvalid},
	} {
		p := pod(c.value, c.started)
		st := Evaluate(p, now)
		reason := ""
		if e := st.Event(p); e != nil {
			reason = e.Reason
		}
		if st.Active != c.active || reason != c.reason {
			t.Errorf("%q (started %v): active %v, event %q; want %v, %q", c.value, c.started, st.Active, reason, c.active, c.reason)
		}
	}
	if st := Evaluate(&corev1.Pod{}, now); st.Present || st.Active || st.Event(&corev1.Pod{}) != nil {
		t.Errorf("no annotation: %+v", st)
	}
	if e := Evaluate(pod("2h", true), now).Event(pod("2h", true)); e.Message != "The karpenter.sh/do-not-disrupt grace period will elapse at 2026-01-01T14:00:00Z" {
		t.Errorf("message %q", e.Message)
	}
	if e := Evaluate(pod("-5m", true), now).Event(pod("-5m", true)); e.Type != corev1.EventTypeWarning || e.Message != `Invalid karpenter.sh/do-not-disrupt annotation: duration "-5m" must be positive, ignoring annotation` {
		t.Errorf("event %+v", e)
	}
}
