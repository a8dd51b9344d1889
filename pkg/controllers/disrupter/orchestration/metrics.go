package orchestration

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names of the queue's metrics (upstream's).
const (
	LabelDecision          = "decision"
	LabelReason            = "reason"
	LabelConsolidationType = "consolidation_type"
)

// QueueFailuresTotal is karpenter_voluntary_disruption_queue_failures_total: commands
// the queue gave up on after they started (a replacement vanished or timed out).
// Errors of StartCommand itself are returned to the caller and not counted.
var QueueFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "queue_failures_total",
	Help: "The number of times that an enqueued disruption decision failed. Labeled by disruption method.",
}, []string{LabelDecision, LabelReason, LabelConsolidationType})

func init() {
	crmetrics.Registry.MustRegister(QueueFailuresTotal)
}
