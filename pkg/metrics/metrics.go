// Package metrics defines the NodeClaim and Node lifecycle metrics with
// upstream Karpenter's names and labels, registered on controller-runtime's
// registry. Controllers that launch, register, disrupt or terminate nodes share
// them from here so that each is registered once.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Label names.
const (
	LabelNodePool     = "nodepool"
	LabelCapacityType = "capacity_type"
	LabelReason       = "reason"
	// LabelZone is the node's topology.kubernetes.io/zone label.
	LabelZone = "zone"
	// LabelConsolidationPolicy is the owning NodePool's consolidationPolicy
	// when the disruption controller chose the NodeClaim, empty otherwise.
	LabelConsolidationPolicy = "consolidation_policy"
	// LabelTerminationMode says how the drain that follows is bounded.
	LabelTerminationMode = "termination_mode"
	// LabelMinValuesRelaxed says whether the new NodeClaim's minValues were
	// relaxed (MIN_VALUES_POLICY=BestEffort).
	LabelMinValuesRelaxed = "min_values_relaxed"
)

// Values of the termination_mode label, from the NodeClaim's
// spec.terminationGracePeriod.
const (
	// TerminationModeGraceful: no terminationGracePeriod, so the drain waits
	// for PDBs and do-not-disrupt pods as long as it takes.
	TerminationModeGraceful = "graceful"
	// TerminationModeEventual: a positive terminationGracePeriod ends the
	// drain at its deadline, whatever blocks it.
	TerminationModeEventual = "eventual"
	// TerminationModeForceful: a zero terminationGracePeriod, the node goes at
	// once.
	TerminationModeForceful = "forceful"
)

// Disruption reasons recorded by the lifecycle controllers.
const (
	ReasonInsufficientCapacity = "insufficient_capacity"
	// ReasonNodeClassNotReady: the launch failed because the NodeClaim's
	// NodeClass was not ready.
	ReasonNodeClassNotReady = "nodeclass_not_ready"
	// ReasonLaunchTimeout: the NodeClaim was not launched within the launch
	// timeout.
	ReasonLaunchTimeout = "launch_timeout"
	// ReasonRegistrationTimeout: the NodeClaim launched but its Node did not
	// register within the registration timeout.
	ReasonRegistrationTimeout = "registration_timeout"
	ReasonGarbageCollected    = "garbage_collected"
)

var (
	// NodeClaimsCreatedTotal is karpenter_nodeclaims_created_total: NodeClaims
	// the provisioner ("provisioning") or the disruption queue (the disruption
	// reason, for replacements) created.
	NodeClaimsCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created and the owning nodepool.",
	}, []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed})
	// NodesCreatedTotal counts nodes that registered for a NodeClaim.
	NodesCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "created_total",
		Help: "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
	}, []string{LabelNodePool, LabelZone})
	// NodesTerminatedTotal counts nodes Karpenter deleted.
	NodesTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "terminated_total",
		Help: "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
	}, []string{LabelNodePool, LabelZone})
	// NodeClaimsTerminatedTotal counts NodeClaims whose finalizer completed.
	NodeClaimsTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type and zone.",
	}, []string{LabelNodePool, LabelCapacityType, LabelZone})
	// NodeClaimsDisruptedTotal counts NodeClaims Karpenter deleted on purpose.
	NodeClaimsDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted, the owning nodepool, capacity type, consolidation policy and termination mode.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode})
	// PodsDisruptionInitiatedTotal counts the pods on NodeClaims Karpenter
	// deleted on purpose (same labels as NodeClaimsDisruptedTotal).
	PodsDisruptionInitiatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "disruption_initiated_total",
		Help: "Number of pods whose node Karpenter started to disrupt, counted when the node's nodeclaim is deleted. Labeled by disruption reason, nodepool, capacity type, consolidation policy and termination mode.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode})
	// NodeClaimTerminationDuration measures a NodeClaim's whole termination,
	// from its deletion timestamp to the removal of its finalizer (drain
	// included).
	NodeClaimTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "termination_duration_seconds",
		Help:    "Duration of NodeClaim termination in seconds.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	}, []string{LabelNodePool})
	// InstanceTerminationDuration measures how long deleting the instance took.
	InstanceTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "instance_termination_duration_seconds",
		Help:    "Duration of CloudProvider Instance termination in seconds.",
		Buckets: []float64{0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192},
	}, []string{LabelNodePool})
)

// DurationBuckets are upstream's buckets for duration histograms (seconds):
// controller-runtime's reconcile buckets extended to 10 minutes, since binding
// a pod that needs a new node takes minutes. A new slice on every call.
func DurationBuckets() []float64 {
	return []float64{
		0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
		1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
		120, 150, 300, 450, 600,
	}
}

func init() {
	crmetrics.Registry.MustRegister(NodeClaimsCreatedTotal, NodesCreatedTotal, NodesTerminatedTotal, NodeClaimsTerminatedTotal, NodeClaimsDisruptedTotal, PodsDisruptionInitiatedTotal, NodeClaimTerminationDuration, InstanceTerminationDuration)
}

// TerminationMode is the termination_mode label value for a NodeClaim.
func TerminationMode(nc *v1.NodeClaim) string {
	switch tgp := nc.Spec.TerminationGracePeriod; {
	case tgp == nil:
		return TerminationModeGraceful
	case tgp.Duration <= 0:
		return TerminationModeForceful
	default:
		return TerminationModeEventual
	}
}

// CountDisrupted adds one to karpenter_nodeclaims_disrupted_total for nc and
// pods to karpenter_pods_disruption_initiated_total. policy is the owning
// NodePool's consolidationPolicy when the disruption controller made the
// decision, "" for lifecycle deletions (expiration, launch and registration
// timeouts, garbage collection, insufficient capacity, a NodeClass not ready);
// pods is how many reschedulable pods the node had, when the caller knows
// (only the disruption controller does).
func CountDisrupted(nc *v1.NodeClaim, reason string, policy v1.ConsolidationPolicy, pods int) {
	labels := []string{reason, nc.Labels[v1.NodePoolLabelKey], nc.Labels[v1.CapacityTypeLabelKey], string(policy), TerminationMode(nc)}
	NodeClaimsDisruptedTotal.WithLabelValues(labels...).Inc()
	PodsDisruptionInitiatedTotal.WithLabelValues(labels...).Add(float64(pods))
}
