package disrupter

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// Metrics (upstream's names and labels).
var (
	// DecisionsTotal counts commands handed to the orchestration queue.
	DecisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
	}, []string{"decision", "reason", "consolidation_type"})
	// DecisionsByNodePoolTotal counts the same commands once per NodePool
	// among their candidates.
	DecisionsByNodePoolTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_by_nodepool_total",
		Help: "Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, reason, and consolidation type.",
	}, []string{"nodepool", "decision", "reason", "consolidation_type"})
	// EligibleNodes is, per reason, how many nodes passed every rule in the last pass.
	EligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "eligible_nodes",
		Help: "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
	}, []string{"reason"})
	// EvaluationDuration times each method of a pass.
	EvaluationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
		Help:    "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation type.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"reason", "consolidation_type"})
	// ConsolidationTimeoutsTotal counts passes that stopped at the simulation bound.
	ConsolidationTimeoutsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "consolidation_timeouts_total",
		Help: "Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation type.",
	}, []string{"consolidation_type"})
	// FailedValidationsTotal counts decisions dropped by validation.
	FailedValidationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "failed_validations_total",
		Help: "Number of candidates that were selected for disruption but failed validation. Labeled by consolidation type.",
	}, []string{"consolidation_type"})
	// NodePoolAllowedDisruptions is each NodePool's budget per reason.
	NodePoolAllowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool. Note that allowed disruptions can change very rapidly, as new nodes may be created and others may be deleted at any point.",
	}, []string{"nodepool", "reason"})
	// NodePoolNodesConsumingBudgets is, per NodePool and reason, how many of
	// the pool's nodes count against its budget (already disrupting or
	// NotReady); allowed_disruptions minus this is what a pass may start.
	NodePoolNodesConsumingBudgets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "nodes_consuming_budgets",
		Help: "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by NodePool.",
	}, []string{"nodepool", "reason"})
	// TerminateFirstDecisionsTotal counts delete-first commands whose
	// replacement could not be launched first, once per NodePool.
	TerminateFirstDecisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "terminate_first_decisions_total",
		Help: "Number of terminate-first disruption decisions performed. Labeled by nodepool name, reason, and why the replacement couldn't be staged first.",
	}, []string{"nodepool", "reason", "terminate_first_reason"})
	// ConsolidationScore observes the score of each consolidation move of a
	// Balanced NodePool (see disruption.Score), by the pool's decision.
	ConsolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Name: "consolidation_score",
		Help:    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
		Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0},
	}, []string{"decision", "nodepool", "policy"})
	// ConsolidationMovesTotal counts the consolidation moves passes found,
	// approved or (by a Balanced pool) rejected, once per NodePool of a move.
	ConsolidationMovesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Name: "consolidation_moves_total",
		Help: "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
	}, []string{"decision", "nodepool", "policy"})
)

// Values of the decision label of the consolidation move metrics.
const (
	MoveApproved = "approved"
	MoveRejected = "rejected"
)

func init() {
	crmetrics.Registry.MustRegister(DecisionsTotal, DecisionsByNodePoolTotal, EligibleNodes, EvaluationDuration, ConsolidationTimeoutsTotal, FailedValidationsTotal, NodePoolAllowedDisruptions, NodePoolNodesConsumingBudgets,
		ConsolidationScore, ConsolidationMovesTotal, TerminateFirstDecisionsTotal)
	// The consolidation types that can time out start at 0.
	for _, m := range disruption.Methods {
		if ct := m.ConsolidationType(); ct != "" && m.Simulates() {
			ConsolidationTimeoutsTotal.WithLabelValues(ct).Add(0)
		}
	}
}

// exportMoves counts a pass's consolidation moves as upstream does: a move of
// one node once for its NodePool, with its verdict; a move of several nodes
// once per NodePool, with the move's verdict; and, for Balanced pools, the
// score observed with the pool's own verdict.
func exportMoves(moves []disruption.Move) {
	verdict := func(ok bool) string {
		if ok {
			return MoveApproved
		}
		return MoveRejected
	}
	for _, m := range moves {
		for _, s := range m.Scores {
			ConsolidationMovesTotal.WithLabelValues(verdict(m.Approved), s.NodePool, string(s.Policy)).Inc()
			if s.Scored {
				own := m.Approved
				if m.Multi {
					own = s.Approved()
				}
				ConsolidationScore.WithLabelValues(verdict(own), s.NodePool, string(s.Policy)).Observe(s.Value())
			}
		}
	}
}
