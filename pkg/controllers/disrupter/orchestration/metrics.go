package orchestration

import (
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
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

// NodeClaimsUnhealthyDisruptedTotal is karpenter_nodeclaims_unhealthy_disrupted_total:
// NodeClaims node repair deleted, by the condition they were repaired for
// (snake case, "ready"), NodePool, capacity type, image and the termination
// mode of the drain repair applied.
var NodeClaimsUnhealthyDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
	Help: "Number of unhealthy nodeclaims disrupted in total by node repair. Labeled by the condition the node was disrupted on, the owning nodepool, the capacity type, the image ID, and the termination mode.",
}, []string{"condition", "nodepool", "capacity_type", "image_id", "termination_mode"})

func init() {
	crmetrics.Registry.MustRegister(QueueFailuresTotal, NodeClaimsUnhealthyDisruptedTotal)
}

// CountUnhealthyDisrupted adds nc, repaired for condition with the drain of
// termination mode mode, to karpenter_nodeclaims_unhealthy_disrupted_total.
func CountUnhealthyDisrupted(nc *v1.NodeClaim, condition corev1.NodeConditionType, mode string) {
	NodeClaimsUnhealthyDisruptedTotal.WithLabelValues(snakeCase(string(condition)), nc.Labels[v1.NodePoolLabelKey],
		nc.Labels[v1.CapacityTypeLabelKey], nc.Status.ImageID, mode).Inc()
}

// snakeCase spells a condition type as the condition label does:
// "AcceleratedHardwareReady" -> "accelerated_hardware_ready",
// "KWOKUnhealthy" -> "kwok_unhealthy".
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
