package eviction

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names.
const (
	LabelCode   = "code"
	LabelReason = "reason"
)

// ReasonForceful is the pods_drained_total reason of a pod drained from a node
// that Karpenter did not choose to disrupt (its NodeClaim has no
// DisruptionReason): a deleted Node, NodeClaim or NodePool, or expiration.
const ReasonForceful = "Forceful Termination"

var (
	// EvictionRequestsTotal counts calls to the Eviction API by response code.
	EvictionRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "eviction_requests_total",
		Help: "The total number of pod eviction requests made by Karpenter, labeled by response code",
	}, []string{LabelCode})
	// PodsDrainedTotal counts pods evicted during node termination.
	PodsDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "drained_total",
		Help: "The total number of pods drained during node termination by Karpenter, labeled by reason",
	}, []string{LabelReason})
	// QueueDepth is the number of pods waiting for a successful eviction.
	QueueDepth = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "eviction_queue_depth",
		Help: "The number of pods currently waiting for a successful eviction in the eviction queue.",
	})
)

func init() {
	crmetrics.Registry.MustRegister(EvictionRequestsTotal, PodsDrainedTotal, QueueDepth)
}
