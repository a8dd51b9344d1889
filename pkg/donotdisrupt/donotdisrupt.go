// Package donotdisrupt reads a pod's karpenter.sh/do-not-disrupt annotation as
// upstream does and says so in upstream's events. "true" protects the pod for
// good; a positive duration ("30m", "4h") protects it until that long after
// the pod started; any other value is invalid and ignored, with a warning
// event on the pod. A pod with a duration that has not started yet (no
// status.startTime) stays protected.
package donotdisrupt

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/events"
)

// Event reasons, upstream's.
const (
	ReasonInvalid            = "InvalidDoNotDisruptAnnotation"
	ReasonUntil              = "DoNotDisruptUntil"
	ReasonGracePeriodElapsed = "DoNotDisruptGracePeriodElapsed"
)

// State is what the annotation means for a pod at some time.
type State struct {
	// Present: the pod carries the annotation.
	Present bool
	// Active: the annotation protects the pod now.
	Active bool
	// Value is the annotation's value.
	Value string
	// Until is when a duration's protection ends; zero for "true", an
	// invalid value, or a pod that has not started.
	Until time.Time
	// Invalid says why the value is neither "true" nor a positive duration.
	Invalid error
}

// Parse reads a value other than "true" as a positive duration.
func Parse(value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("failed to parse %q as a duration: %w", value, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", value)
	}
	return d, nil
}

// Evaluate reads the pod's annotation at now.
func Evaluate(pod *corev1.Pod, now time.Time) State {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return State{}
	}
	st := State{Present: true, Value: value}
	if value == "true" {
		st.Active = true
		return st
	}
	d, err := Parse(value)
	if err != nil {
		st.Invalid = err
		return st
	}
	if pod.Status.StartTime == nil {
		st.Active = true
		return st
	}
	st.Until = pod.Status.StartTime.Add(d)
	st.Active = now.Before(st.Until)
	return st
}

// Event is upstream's event for the evaluation, or nil when there is none
// (no annotation, "true", or a duration on a pod that has not started).
func (st State) Event(pod *corev1.Pod) *events.Event {
	switch {
	case !st.Present:
		return nil
	case st.Invalid != nil:
		msg := st.Invalid.Error()
		return &events.Event{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: ReasonInvalid,
			Message:      fmt.Sprintf("Invalid %s annotation: %s, ignoring annotation", v1.DoNotDisruptAnnotationKey, msg),
			DedupeValues: []string{string(pod.UID), msg}}
	case st.Until.IsZero():
		return nil
	case st.Active:
		at := st.Until.Format(time.RFC3339)
		return &events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: ReasonUntil,
			Message:      fmt.Sprintf("The %s grace period will elapse at %s", v1.DoNotDisruptAnnotationKey, at),
			DedupeValues: []string{string(pod.UID), at}}
	default:
		return &events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: ReasonGracePeriodElapsed,
			Message:      fmt.Sprintf("The %s grace period has elapsed, pod is now disruptable", v1.DoNotDisruptAnnotationKey),
			DedupeValues: []string{string(pod.UID)}}
	}
}

// Active evaluates the pod's annotation at now and publishes its event, if
// any, through pub (which may be nil).
func Active(pod *corev1.Pod, now time.Time, pub events.Publisher) bool {
	st := Evaluate(pod, now)
	if e := st.Event(pod); e != nil && pub != nil {
		pub.Publish(*e)
	}
	return st.Active
}
