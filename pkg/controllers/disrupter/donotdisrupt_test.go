package disrupter_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// A pod's do-not-disrupt duration blocks its node until it elapses, and the
// pass says so on the pod in upstream's events.
func TestDoNotDisruptDurationEvents(t *testing.T) {
	f := newFixture(t)
	f.node(t, "big", "c-16x-amd64-linux")
	start := metav1.NewTime(f.clock.Now().Add(-time.Hour).Truncate(time.Second))
	p := fixtures.Pod("web", fixtures.OnNode("big"), fixtures.WithRequests("cpu", "1", "memory", "256Mi"), fixtures.WithPhase(corev1.PodRunning),
		fixtures.WithAnnotations(map[string]string{v1.DoNotDisruptAnnotationKey: "2h"}),
		fixtures.PodFunc(func(p *corev1.Pod) { p.Status.StartTime = &start }))
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	until := "Normal DoNotDisruptUntil The karpenter.sh/do-not-disrupt grace period will elapse at " + start.Add(2*time.Hour).Format(time.RFC3339)
	if evs := f.events(); !containsEvent(evs, until) {
		t.Fatalf("want %q, got %q", until, evs)
	}
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done, got %+v", r)
	}
	if evs := f.events(); containsEvent(evs, "DoNotDisruptUntil") {
		t.Fatalf("repeated within the dedupe window: %q", evs)
	}
}
