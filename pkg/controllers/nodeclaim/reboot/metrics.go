package reboot

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a reboot, the values of the metrics' result label (upstream's).
const (
	// ResultSucceeded: the node came back with a new boot ID and Ready.
	ResultSucceeded = "succeeded"
	// ResultProviderError: the cloud provider refused the reboot, cannot
	// reboot, or did not accept it within IssuanceTimeout.
	ResultProviderError = "provider_error"
	// ResultRecoveryTimeout: the node did not come back within
	// ObservationWindow of the reboot being issued.
	ResultRecoveryTimeout = "recovery_timeout"
	// ResultInvalidRequest: the reboot's drain bound annotation is not a
	// non-negative duration.
	ResultInvalidRequest = "invalid_request"
)

// durationBuckets span a fast VM reboot to past the observation window
// (10s to 1280s, upstream's).
var durationBuckets = prometheus.ExponentialBuckets(10, 2, 8)

var (
	// RebootsTotal is karpenter_nodes_reboots_total{result}.
	RebootsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "reboots_total",
		Help: "Node reboots Karpenter finished, by how they ended (succeeded, provider_error, recovery_timeout, invalid_request).",
	}, []string{"result"})
	// RebootDurationSeconds is karpenter_nodes_reboot_duration_seconds{result}:
	// from the reboot's request to its end.
	RebootDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "reboot_duration_seconds",
		Help:    "Seconds from a node reboot being requested to its end, by how it ended.",
		Buckets: durationBuckets,
	}, []string{"result"})
	// RebootRecoveryDurationSeconds is
	// karpenter_nodes_reboot_recovery_duration_seconds: from the reboot being
	// issued to the node back with a new boot ID and Ready, for reboots that
	// succeeded.
	RebootRecoveryDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "reboot_recovery_duration_seconds",
		Help:    "Seconds from a node reboot being issued to the node back with a new boot ID and Ready; successful reboots only.",
		Buckets: durationBuckets,
	})
)

func init() {
	crmetrics.Registry.MustRegister(RebootsTotal, RebootDurationSeconds, RebootRecoveryDurationSeconds)
}
