package disruption_test

import (
	"sort"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/events"
)

// A pass tells pods with a do-not-disrupt duration or an invalid value what it
// made of the annotation, in upstream's events.
func TestDoNotDisruptEvents(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes())
	a := w.node("a", "default", "l")
	w.pod(a, "running", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "2h"), started(time.Hour))
	b := w.node("b", "default", "l")
	w.pod(b, "elapsed", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "2h"), started(3*time.Hour))
	c := w.node("c", "default", "l")
	w.pod(c, "invalid", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "soon"))
	d := w.node("d", "default", "l")
	w.pod(d, "forever", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
	fake := record.NewFakeRecorder(100)
	w.in.Events = events.NewPublisher(fake, clocktesting.NewFakeClock(now))
	w.run()
	var got []string
	for len(fake.Events) > 0 {
		got = append(got, <-fake.Events)
	}
	sort.Strings(got)
	want := []string{
		"Normal DoNotDisruptGracePeriodElapsed The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable",
		"Normal DoNotDisruptUntil The karpenter.sh/do-not-disrupt grace period will elapse at " + now.Add(time.Hour).UTC().Format(time.RFC3339),
		`Warning InvalidDoNotDisruptAnnotation Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "soon" as a duration: time: invalid duration "soon", ignoring annotation`,
	}
	if len(got) != len(want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events\n%q\nwant\n%q", got, want)
		}
	}
}
