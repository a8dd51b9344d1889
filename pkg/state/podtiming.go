package state

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// schedulingDecisionDuration is upstream's
// karpenter_pods_scheduling_decision_duration_seconds: from the first time the
// provisioner saw a pod until its first scheduling decision, placed or not.
var schedulingDecisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Namespace: "karpenter", Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
	Help:    "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
	Buckets: metrics.DurationBuckets(),
})

func init() { crmetrics.Registry.MustRegister(schedulingDecisionDuration) }

// PodSchedulingTimes remembers, per pending pod, three moments of the
// provisioner's work on it, from which the pod metrics controller derives
// upstream's karpenter_pods_provisioning_* latencies: when the provisioner
// first saw the pod (ack), when it first decided about it (placed or not), and
// when it first found the pod a place (schedulable; forgotten again when a
// later decision finds none). The times are in memory, as upstream's: a restart
// starts them again.
type PodSchedulingTimes struct {
	clock clock.Clock

	mu          sync.Mutex
	acked       map[types.NamespacedName]time.Time
	decided     map[types.NamespacedName]time.Time
	schedulable map[types.NamespacedName]time.Time
}

// NewPodSchedulingTimes returns an empty record on clk.
func NewPodSchedulingTimes(clk clock.Clock) *PodSchedulingTimes {
	return &PodSchedulingTimes{clock: clk, acked: map[types.NamespacedName]time.Time{},
		decided: map[types.NamespacedName]time.Time{}, schedulable: map[types.NamespacedName]time.Time{}}
}

// Ack records that the provisioner saw the pods; only the first time counts.
func (t *PodSchedulingTimes) Ack(pods ...*corev1.Pod) {
	if t == nil {
		return
	}
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range pods {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if _, ok := t.acked[key]; !ok {
			t.acked[key] = now
		}
	}
}

// Decided records a scheduling decision: placed pods (on a new or existing
// node) become schedulable from now unless they already were; failed ones
// are no longer. The first decision about a pod observes
// karpenter_pods_scheduling_decision_duration_seconds. Pods already bound
// (those of nodes being deleted, simulated for capacity) are not pending and
// are left out.
func (t *PodSchedulingTimes) Decided(placed, failed []*corev1.Pod) {
	if t == nil {
		return
	}
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	first := func(key types.NamespacedName) {
		if _, ok := t.decided[key]; ok {
			return
		}
		t.decided[key] = now
		if at, ok := t.acked[key]; ok {
			schedulingDecisionDuration.Observe(now.Sub(at).Seconds())
		}
	}
	for _, p := range failed {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		delete(t.schedulable, key)
		first(key)
	}
	for _, p := range placed {
		if p.Spec.NodeName != "" {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if _, ok := t.schedulable[key]; !ok {
			t.schedulable[key] = now
		}
		first(key)
	}
}

// Times returns when the pod was first seen, first decided about and found
// schedulable; a zero time for a moment that did not happen.
func (t *PodSchedulingTimes) Times(key types.NamespacedName) (acked, decided, schedulable time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acked[key], t.decided[key], t.schedulable[key]
}

// Forget drops what is known of the pod: it started, finished or is gone.
func (t *PodSchedulingTimes) Forget(key types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.acked, key)
	delete(t.decided, key)
	delete(t.schedulable, key)
}
