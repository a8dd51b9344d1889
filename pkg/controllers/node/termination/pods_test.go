package termination_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination/eviction"
)

func TestHasDoNotDisrupt(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for value, want := range map[string]bool{
		"true":  true,
		"false": false,
		"4h":    true,  // started 1h ago
		"30m":   false, // expired 30m ago
		"soon":  false, // invalid: ignored, as upstream
		"-1h":   false, // not positive: invalid
		"0s":    false,
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: value}},
			Status: corev1.PodStatus{StartTime: &metav1.Time{Time: started}}}
		if got := termination.HasDoNotDisrupt(p, started.Add(time.Hour)); got != want {
			t.Errorf("%q: got %v, want %v", value, got, want)
		}
	}
	if termination.HasDoNotDisrupt(&corev1.Pod{}, started) {
		t.Error("a pod without the annotation is protected")
	}
	notStarted := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "1m"},
		CreationTimestamp: metav1.NewTime(started)}}
	if !termination.HasDoNotDisrupt(notStarted, started.Add(time.Hour)) {
		t.Error("a pod with a duration that has not started is not protected")
	}
}

// A pod a v0.31 install left running with v1alpha5's karpenter.sh/do-not-evict
// is protected until it is re-annotated.
func TestHasDoNotDisruptLegacyDoNotEvict(t *testing.T) {
	now := time.Now()
	for value, want := range map[string]bool{"true": true, "false": false} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{termination.DoNotEvictAnnotationKey: value}}}
		if got := termination.HasDoNotDisrupt(p, now); got != want {
			t.Errorf("karpenter.sh/do-not-evict=%s: got %v, want %v", value, got, want)
		}
	}
}

func TestTierOf(t *testing.T) {
	ds := []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}}
	cases := []struct {
		pod  corev1.Pod
		want termination.Tier
	}{
		{corev1.Pod{}, termination.TierWorkload},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}}, termination.TierDaemon},
		{corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}, termination.TierCriticalWorkload},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}, Spec: corev1.PodSpec{PriorityClassName: "system-cluster-critical"}}, termination.TierCriticalDaemon},
		{corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high"}}, termination.TierWorkload},
	}
	for i, c := range cases {
		if got := termination.TierOf(&c.pod); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestHoldsDrain(t *testing.T) {
	now := time.Now()
	deleted := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	for name, c := range map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"running":             {corev1.Pod{}, true},
		"terminating":         {corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: deleted(30 * time.Second)}}, true},
		"stuck terminating":   {corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: deleted(2 * time.Minute)}}, false},
		"succeeded":           {corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		"mirror":              {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, false},
		"tolerates all":       {corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}, false},
		"tolerates other key": {corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}}}, true},
	} {
		if got := termination.HoldsDrain(&c.pod, now); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := eviction.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := eviction.Backoff(1000); got != eviction.MaxDelay {
		t.Errorf("Backoff(1000) = %v", got)
	}
}
