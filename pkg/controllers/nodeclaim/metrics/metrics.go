// Package metrics defines the NodeClaim and Node lifecycle metrics with
// upstream Karpenter's names and labels, registered on controller-runtime's
// registry. Controllers that launch, register, disrupt or terminate nodes share
// them from here so that each is registered once.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names.
const (
	LabelNodePool     = "nodepool"
	LabelCapacityType = "capacity_type"
	LabelReason       = "reason"
)

// Disruption reasons recorded by the lifecycle controllers.
const (
	ReasonInsufficientCapacity = "insufficient_capacity"
	ReasonLiveness             = "liveness"
	ReasonGarbageCollected     = "garbage_collected"
)

var (
	// NodesCreatedTotal counts nodes that registered for a NodeClaim.
	NodesCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "created_total",
		Help: "Number of nodes created in total by Karpenter. Labeled by owning nodepool.",
	}, []string{LabelNodePool})
	// NodesTerminatedTotal counts nodes Karpenter deleted.
	NodesTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "terminated_total",
		Help: "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool.",
	}, []string{LabelNodePool})
	// NodeClaimsTerminatedTotal counts NodeClaims whose finalizer completed.
	NodeClaimsTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool and capacity type.",
	}, []string{LabelNodePool, LabelCapacityType})
	// NodeClaimsDisruptedTotal counts NodeClaims Karpenter deleted on purpose.
	NodeClaimsDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted, the owning nodepool and capacity type.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType})
	// InstanceTerminationDuration measures how long deleting the instance took.
	InstanceTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "instance_termination_duration_seconds",
		Help:    "Duration of CloudProvider Instance termination in seconds.",
		Buckets: []float64{0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192},
	}, []string{LabelNodePool})
)

func init() {
	crmetrics.Registry.MustRegister(NodesCreatedTotal, NodesTerminatedTotal, NodeClaimsTerminatedTotal, NodeClaimsDisruptedTotal, InstanceTerminationDuration)
}
