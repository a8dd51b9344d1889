package orchestration

import (
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// Decision is what a command does to its candidates: delete them, or replace
// them with the command's Replacements. It is the disruption decision's
// Action, under the name the queue's commands, logs and events use.
type Decision = disruption.Action

const (
	DecisionDelete  = disruption.ActionDelete
	DecisionReplace = disruption.ActionReplace
)

// Command is one disruption decision, ready to act on.
type Command struct {
	// Method decided the command. Its Reason is the command's: the
	// DisruptionReason condition, events and the metrics' reason label.
	Method   disruption.Method
	Decision Decision
	// Candidates are the NodeClaims to disrupt (as read when the decision was taken).
	Candidates []*v1.NodeClaim
	// Replacements are NodeClaims to create before any candidate is deleted. They
	// are complete objects (labels, annotations, owner NodePool, finalizer,
	// requirements), built like the provisioner builds its NodeClaims, not yet
	// created. Empty for DecisionDelete.
	Replacements []*v1.NodeClaim
	// Explanation says, for a person, why this command was chosen (e.g. "node
	// kwok-abc is empty", "replace 3 nodes (0.51/h) with 1 c-4x-amd64-linux
	// (0.17/h)"). It goes into events and the DisruptionReason condition.
	Explanation string
	// Repair, for a command of the repair method, names the condition its
	// candidate is repaired for and bounds its drain (the deletion stamps
	// the NodeClaim's termination timestamp from it); nil otherwise.
	Repair *disruption.Repair
	// Metrics holds, by candidate name, what the disruption metrics record of
	// the candidate as the decision saw it.
	Metrics map[string]CandidateMetrics
}

// CandidateMetrics is what karpenter_nodeclaims_disrupted_total and
// karpenter_pods_disruption_initiated_total record of a candidate.
type CandidateMetrics struct {
	// ConsolidationPolicy of the candidate's NodePool (the
	// consolidation_policy label).
	ConsolidationPolicy v1.ConsolidationPolicy
	// ReschedulablePods on the candidate's node, whose disruption deleting it
	// starts.
	ReschedulablePods int
}

// CandidateNames lists the candidates' names, in order.
func (c *Command) CandidateNames() []string {
	out := make([]string, len(c.Candidates))
	for i, nc := range c.Candidates {
		out[i] = nc.Name
	}
	return out
}
