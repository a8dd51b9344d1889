package events

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestIdenticalEventsAreRecordedOncePerWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fake := record.NewFakeRecorder(10)
	r := NewDedupingRecorder(fake, clk)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-a"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "uid-b"}}

	r.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no %s", "room")
	r.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no %s", "room")
	if got := drain(fake); len(got) != 1 || got[0] != "Warning FailedScheduling no room" {
		t.Fatalf("first and repeated event: recorded %q, want one", got)
	}
	// Another message, reason or object is another event.
	r.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no cpu")
	r.Eventf(pod, corev1.EventTypeNormal, "Nominated", "no room")
	r.Eventf(other, corev1.EventTypeWarning, "FailedScheduling", "no room")
	if got := drain(fake); len(got) != 3 {
		t.Fatalf("distinct events: recorded %q, want three", got)
	}
	clk.Step(EventDedupeWindow - time.Second)
	r.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no room")
	if got := drain(fake); len(got) != 0 {
		t.Fatalf("inside the window: recorded %q", got)
	}
	clk.Step(time.Second)
	r.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no room")
	if got := drain(fake); len(got) != 1 {
		t.Fatalf("after the window: recorded %q, want one", got)
	}
}

func TestNilRecorderStaysNil(t *testing.T) {
	if NewDedupingRecorder(nil, clocktesting.NewFakeClock(time.Now())) != nil {
		t.Fatal("a nil recorder must stay nil, so callers' nil checks keep working")
	}
}

func TestPublishDedupesByReasonAndValuesForTheEventsTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fake := record.NewFakeRecorder(10)
	p := NewPublisher(fake, clk)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-a"}}
	e := Event{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: "R", Message: "one", DedupeValues: []string{"uid-a"}, DedupeTimeout: time.Minute}
	p.Publish(e)
	e2 := e
	e2.Message = "two" // the message is not part of the key
	p.Publish(e2)
	if got := drain(fake); len(got) != 1 || got[0] != "Warning R one" {
		t.Fatalf("recorded %q, want only the first", got)
	}
	clk.Step(time.Minute)
	p.Publish(e2)
	if got := drain(fake); len(got) != 1 || got[0] != "Warning R two" {
		t.Fatalf("after the timeout: recorded %q", got)
	}
	// Without dedupe values every event is recorded.
	e.DedupeValues = nil
	p.Publish(e, e)
	if got := drain(fake); len(got) != 2 {
		t.Fatalf("undeduplicated: recorded %q, want two", got)
	}
	NewPublisher(nil, clk).Publish(e) // a nil recorder records nothing
}
