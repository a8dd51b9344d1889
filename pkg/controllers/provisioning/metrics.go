package provisioning

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/state"
)

// Metric names are upstream Karpenter's.
var (
	// SchedulingDuration is karpenter_scheduler_scheduling_duration_seconds.
	SchedulingDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help:    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"controller"})
	// UnschedulablePods is karpenter_scheduler_unschedulable_pods_count.
	UnschedulablePods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "unschedulable_pods_count",
		Help: "The number of unschedulable pods in the last scheduling simulation.",
	}, []string{"controller"})
	// NodePoolUsage is karpenter_nodepools_usage.
	NodePoolUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "usage",
		Help: "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
	// NodePoolLimit is karpenter_nodepools_limit.
	NodePoolLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "limit",
		Help: "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
	// PodsState is karpenter_pods_state: one series per pod, value 1.
	PodsState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "state",
		Help: "Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, whether it is scheduled, nodepool name, zone, architecture, capacity type, instance type, pod phase, whether it is ready and whether its node is managed by Karpenter.",
	}, []string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"})
)

// LaunchLoops is karpenter_provisioner_launch_loops_total, this implementation's
// own (upstream has no such metric): how many times the provisioner stopped
// launching NodeClaims for a workload's pods because the ones launched for them
// became nodes they did not run on, over and over (see loops.go). Any increase
// is worth an alert: pods stay pending until the cause is fixed.
var LaunchLoops = prometheus.NewCounter(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "provisioner", Name: "launch_loops_total",
	Help: "Number of times the provisioner stopped launching NodeClaims for pods because the NodeClaims launched for them became nodes they did not run on (a launch loop). Pods of the workload get a LaunchLoop event.",
})

// Reasons of karpenter_nodeclaims_created_total (metrics.NodeClaimsCreatedTotal in pkg/metrics).
const (
	ReasonProvisioning = "provisioning"
)

func init() {
	crmetrics.Registry.MustRegister(SchedulingDuration, UnschedulablePods, NodePoolUsage, NodePoolLimit, PodsState, LaunchLoops)
}

// MetricsExporter refreshes the NodePool and cluster state gauges every Period, so
// they stay current between provisioning decisions.
type MetricsExporter struct {
	Cluster *state.Cluster
	Clock   clock.Clock
	Period  time.Duration
}

// Start runs until ctx ends (a manager Runnable; every replica exports).
func (m *MetricsExporter) Start(ctx context.Context) error {
	period := m.Period
	if period == 0 {
		period = 10 * time.Second
	}
	for {
		ExportNodePoolMetrics(m.Cluster)
		m.Cluster.ExportMetrics(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-m.Clock.After(period):
		}
	}
}
