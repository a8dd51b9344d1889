package provisioning

import (
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The scheduler gauges upstream exports per scheduling run. Our solver is one
// pure call, so a run's queue depth (the pods it was given) and its unfinished
// work (seconds since it started) are read at scrape time from the run in
// progress, and a finished run exports nothing, as upstream's deletes them.
var (
	// IgnoredPods is karpenter_scheduler_ignored_pods_count: pending pods left
	// out of the last decision because they ask not to run on a node Karpenter
	// provisions (karpenter.sh/nodepool DoesNotExist).
	IgnoredPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "ignored_pods_count",
		Help: "Number of pods ignored during scheduling by Karpenter",
	})
	// PendingPodsByEffectiveZone is
	// karpenter_scheduler_pending_pods_by_effective_zone_count.
	PendingPodsByEffectiveZone = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "pending_pods_by_effective_zone_count",
		Help: "Pending pods dimensioned by effective zone constraint, or the intersection of pod-level zone signals and topology constraints. Values: specific zone name (e.g., 'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid intersection).",
	}, []string{"controller", "zone"})

	runs = &schedulerRuns{running: map[string]schedulerRun{}}
)

func init() {
	crmetrics.Registry.MustRegister(IgnoredPods, PendingPodsByEffectiveZone, runs)
}

var (
	queueDepthDesc = prometheus.NewDesc("karpenter_scheduler_queue_depth",
		"The number of pods currently waiting to be scheduled.", []string{"controller", "scheduling_id"}, nil)
	unfinishedWorkDesc = prometheus.NewDesc("karpenter_scheduler_unfinished_work_seconds",
		"How many seconds of work has been done that is in progress and hasn't been considered in the longest running processor metric.", []string{"controller", "scheduling_id"}, nil)
)

type schedulerRun struct {
	id    string
	start time.Time
	depth int
}

// schedulerRuns is the collector of the two per-run gauges.
type schedulerRuns struct {
	mu      sync.Mutex
	running map[string]schedulerRun // by controller
}

// begin records that controller started a run over depth pods; the returned
// func ends it.
func (r *schedulerRuns) begin(controller string, depth int) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[controller] = schedulerRun{id: uuid.NewString(), start: time.Now(), depth: depth}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.running, controller)
	}
}

func (r *schedulerRuns) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- unfinishedWorkDesc
}

func (r *schedulerRuns) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for controller, run := range r.running {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(run.depth), controller, run.id)
		ch <- prometheus.MustNewConstMetric(unfinishedWorkDesc, prometheus.GaugeValue, time.Since(run.start).Seconds(), controller, run.id)
	}
}

// asksForNoKarpenterNode reports whether the pod requires
// karpenter.sh/nodepool DoesNotExist in every way it can be placed: upstream
// ignores such pods (a Karpenter controller replica, say) instead of reporting
// them unschedulable.
func asksForNoKarpenterNode(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms {
		found := false
		for _, r := range term.MatchExpressions {
			if r.Key == v1.NodePoolLabelKey && r.Operator == corev1.NodeSelectorOpDoesNotExist {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// effectiveZone is the zone a pending pod can go to by its own node
// selector and required node affinity (any of its terms): the zone when
// exactly one is allowed, "none" when none is, "flexible" otherwise. Volume
// topology is not part of it here, where upstream also intersects the zones of
// the pod's volumes.
func effectiveZone(pod *corev1.Pod) string {
	base := scheduling.FromLabels(pod.Spec.NodeSelector)
	terms := []scheduling.Requirements{base}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if ts := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(ts) > 0 {
			terms = terms[:0]
			for _, t := range ts {
				terms = append(terms, base.Intersect(scheduling.FromNodeSelectorRequirements(t.MatchExpressions...)))
			}
		}
	}
	zones := map[string]bool{}
	for _, t := range terms {
		r, ok := t.Get(corev1.LabelTopologyZone)
		if !ok || r.Len() > len(r.Values()) || (r.Operator() != corev1.NodeSelectorOpIn && r.Operator() != corev1.NodeSelectorOpDoesNotExist) {
			return "flexible" // a term that leaves the zone open
		}
		for _, z := range r.Values() {
			zones[z] = true
		}
	}
	switch len(zones) {
	case 0:
		return "none"
	case 1:
		for z := range zones {
			return z
		}
	}
	return "flexible"
}
