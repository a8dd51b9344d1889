package termination

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Node termination metrics, with upstream's names. karpenter_nodes_terminated_total
// is shared with the other lifecycle controllers and lives in
// pkg/metrics.
var (
	// TerminationDuration is the time from a Node's deletion to the removal
	// of its finalizer: drain, volume detachment and instance termination.
	TerminationDuration = prometheus.NewSummaryVec(prometheus.SummaryOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "termination_duration_seconds",
		Help:       "The time taken between a node's deletion request and the removal of its finalizer",
		Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0},
	}, []string{metrics.LabelNodePool})
	// NodesDrainedTotal counts nodes whose drain completed.
	NodesDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "drained_total",
		Help: "The total number of nodes drained by Karpenter",
	}, []string{metrics.LabelNodePool})
	// LifetimeDuration is the age of nodes when their termination completed.
	LifetimeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "lifetime_duration_seconds",
		Help:    "The lifetime duration of the nodes since creation.",
		Buckets: lifetimeBuckets(),
	}, []string{metrics.LabelNodePool})
)

func lifetimeBuckets() []float64 {
	day := 24 * time.Hour
	var out []float64
	for _, d := range []time.Duration{
		15 * time.Minute, 30 * time.Minute, 45 * time.Minute,
		time.Hour, 2 * time.Hour, 4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 10 * time.Hour, 12 * time.Hour, 16 * time.Hour, 20 * time.Hour,
		day, 2 * day, 3 * day, 5 * day, 10 * day, 15 * day, 20 * day, 25 * day, 30 * day,
	} {
		out = append(out, d.Seconds())
	}
	return out
}

func init() {
	crmetrics.Registry.MustRegister(TerminationDuration, NodesDrainedTotal, LifetimeDuration)
}
