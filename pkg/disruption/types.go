package disruption

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// MinInstanceTypesForSpotToSpotConsolidation is upstream's minimum number of
// cheaper instance types single-node spot-to-spot consolidation needs, and the
// number it launches with: a replacement drawn from the 15 cheapest types is
// itself never immediately replaceable by a cheaper spot node.
const MinInstanceTypesForSpotToSpotConsolidation = 15

// DefaultMaxSimulationWork bounds the scheduling simulation of one pass (see
// Options.MaxSimulationWork).
const DefaultMaxSimulationWork = 1_000_000

// Input is the snapshot a pass decides over. Nothing in it is modified.
type Input struct {
	// Now is the time budgets' schedules, do-not-disrupt durations and drift
	// ages are evaluated at.
	Now time.Time
	// Nodes is every unit of capacity: Nodes, NodeClaims, or both.
	Nodes []*Node
	// NodePools by name, with the instance types their nodes are priced from.
	NodePools []*NodePool
	// PDBs are the cluster's PodDisruptionBudgets.
	PDBs []*policyv1.PodDisruptionBudget
	// Scheduling is the solver input for simulations: Pods are the pending pods
	// (including those on capacity being deleted), NodePools the pools that may
	// launch replacements, plus DaemonSets, namespaces, volumes, options and an
	// optional Cache. Its ExistingNodes are ignored: they come from Nodes.
	Scheduling *scheduling.Input
	// StaticClaims, by NodePool name, are the NodeClaims a static NodePool
	// (spec.replicas) launches: drift replaces a static pool's node with one.
	// A static pool without one admits no instance type.
	StaticClaims map[string]*scheduling.NewClaim
	Options      Options
	// RepairPolicies are the cloud provider's: which Node conditions make a
	// node unhealthy (read only with Options.NodeRepair).
	RepairPolicies []cloudprovider.RepairPolicy
	// RecentReboots counts, by NodeClaim UID, the reboots repair requested
	// for it within the last RebootHistoryWindow. A node rebooted
	// RebootsBeforeReplacement times is replaced instead of rebooted again.
	RecentReboots map[types.UID]int
	// Events, when set, receives the events a pass tells pods about their
	// karpenter.sh/do-not-disrupt durations and invalid values (upstream's,
	// deduplicated as upstream's). A plan leaves it nil.
	Events events.Publisher
}

// Options of a pass.
type Options struct {
	// SpotToSpotConsolidation is the feature gate of that name.
	SpotToSpotConsolidation bool
	// MaxSimulationWork bounds the scheduling simulation of a pass, counted as the
	// sum over simulations of existing nodes, their pods and the pods to place
	// handed to the solver (roughly what a solve costs). A
	// pass that reaches it stops considering candidates and reports a timeout.
	// The bound is in work, not wall time, so that a pass stays deterministic.
	// 0 means DefaultMaxSimulationWork.
	MaxSimulationWork int
	// PodDeletionCostManagement is the feature gate of that name: Karpenter
	// writes controller.kubernetes.io/pod-deletion-cost itself (see
	// RankForDeletionCost), so a pod's eviction cost no longer reads it.
	PodDeletionCostManagement bool
	// TerminateFirstDrift is the feature gate of that name: a drifted node of
	// a static NodePool at its node limit (limits.nodes), which cannot stage
	// a replacement first, is deleted first and the pool refilled after; so is
	// a drifted node in a full capacity reservation whose pods can only go
	// back into its own slot (TerminateFirstNoReservedCapacity).
	TerminateFirstDrift bool
	// NodeRepair is the feature gate of that name: the repair method replaces
	// nodes whose conditions match Input.RepairPolicies.
	NodeRepair bool
	// TerminateFirstRepair is the feature gate of that name: an unhealthy
	// node of a static NodePool at its node limit, which cannot stage a
	// replacement first, is deleted first and the pool refilled after; so is
	// an unhealthy node in a full capacity reservation whose pods can only go
	// back into its own slot (TerminateFirstNoReservedCapacity).
	TerminateFirstRepair bool
	// DisableRepackConsolidation leaves out repack consolidation
	// (MethodRepackConsolidation), which replaces several nodes with several
	// cheaper ones: consolidation then makes only upstream Karpenter's moves.
	DisableRepackConsolidation bool
}

// Node is one unit of capacity and what the controller knows about it.
type Node struct {
	// Name is the Node's name, or the NodeClaim's while no Node exists.
	Name      string
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Existing is the solver's view (labels, taints, allocatable, bound pods);
	// nil for capacity the solver must not count (e.g. being deleted). Its Pods
	// are the pods bound to the node. A node without it is never a candidate.
	Existing *scheduling.ExistingNode
	// NodePool is the karpenter.sh/nodepool label, "" when unmanaged.
	NodePool string
	// Initialized: the node serves pods as advertised.
	Initialized bool
	// Deleting: the Node or NodeClaim has a deletion timestamp.
	Deleting bool
	// MarkedForDeletion: a disruption command holds it (it is in the
	// orchestration queue, tainted and waiting for its replacements).
	MarkedForDeletion bool
	// Nominated: the provisioner expects pending pods to land on it.
	Nominated bool
}

// Pods bound to the node.
func (n *Node) Pods() []*corev1.Pod {
	if n.Existing == nil {
		return nil
	}
	return n.Existing.Pods
}

// ReschedulablePods are the pods bound to the node that need a new home when
// it goes (not DaemonSet, mirror, finished or terminating pods).
func (n *Node) ReschedulablePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range n.Pods() {
		if reschedulable(p) {
			out = append(out, p)
		}
	}
	return out
}

// NodePool is a karpenter.sh/v1 NodePool with the instance types its nodes are
// priced from (the cloud provider's answer for it, launchable or not).
type NodePool struct {
	NodePool      *v1.NodePool
	InstanceTypes []*scheduling.InstanceType
}

// Decision is one disruption command.
type Decision struct {
	// Method decided it; its Reason is the decision's.
	Method Method
	// Candidates to disrupt, in the order they were chosen.
	Candidates []*Node
	// Replacements to launch before any candidate is deleted; empty for a delete.
	Replacements []*scheduling.NewClaim
	// Explanation says, for a person, why.
	Explanation string
	// CandidatesPrice and ReplacementsPrice are per hour (0 when unknown).
	CandidatesPrice   float64
	ReplacementsPrice float64
	// Repair says, for a decision of the repair method, which condition the
	// node is repaired for and how its drain is bounded; nil otherwise.
	Repair *Repair
	// Scores of a consolidation, per NodePool of its candidates (Balanced
	// pools' scored, see balanced.go).
	Scores []Score
	// TerminateFirstReason, on a delete, says why the replacement could not
	// be launched first (upstream's values, e.g. TerminateFirstStaticAtLimit).
	TerminateFirstReason string
	// Reboot: the candidate is rebooted in place (a repair policy's
	// RebootNode action), not deleted; there are no replacements.
	Reboot bool
}

// TerminateFirstStaticAtLimit: a static NodePool at its node limit cannot
// launch a node's replacement alongside it.
const TerminateFirstStaticAtLimit = "static-at-limit"

// Action is what a decision does to its candidates. Its values are the words
// of the decision metrics' action label, of events and of the kubectl plugin's
// output.
type Action string

const (
	// ActionDelete deletes the candidates: their pods fit on the remaining nodes.
	ActionDelete Action = "delete"
	// ActionReplace launches the decision's Replacements, then deletes the
	// candidates.
	ActionReplace Action = "replace"
	// ActionTerminateFirst deletes the candidates whose replacement cannot be
	// launched first (see Decision.TerminateFirstReason); it comes after.
	ActionTerminateFirst Action = "terminate-first"
	// ActionReboot reboots the candidate in place (upstream's "reboot").
	ActionReboot Action = "reboot"
)

// Action is ActionReboot for a reboot, ActionReplace when the decision
// launches replacements, ActionTerminateFirst for a delete whose replacement
// comes after, ActionDelete otherwise.
func (d *Decision) Action() Action {
	switch {
	case d.Reboot:
		return ActionReboot
	case len(d.Replacements) > 0:
		return ActionReplace
	case d.TerminateFirstReason != "":
		return ActionTerminateFirst
	}
	return ActionDelete
}

// CandidateNames lists the candidates' names in order.
func (d *Decision) CandidateNames() []string {
	out := make([]string, len(d.Candidates))
	for i, c := range d.Candidates {
		out[i] = c.Name
	}
	return out
}

// Code classifies why a node is not disrupted.
type Code string

const (
	// CodeNotInitialized: the node has not finished starting.
	CodeNotInitialized Code = "NotInitialized"
	// CodeNominated: the provisioner expects pending pods to land on it.
	CodeNominated Code = "Nominated"
	// CodeNodePoolNotFound: its NodePool does not exist (any more).
	CodeNodePoolNotFound Code = "NodePoolNotFound"
	// CodeDoNotDisrupt: the node, its NodeClaim or one of its pods carries karpenter.sh/do-not-disrupt.
	CodeDoNotDisrupt Code = "DoNotDisrupt"
	// CodePodDisruptionBudget: a PDB would refuse an eviction.
	CodePodDisruptionBudget Code = "PodDisruptionBudget"
	// CodeBudget: the NodePool's disruption budget is used up.
	CodeBudget Code = "DisruptionBudget"
	// CodeConsolidationDisabled: the NodePool's policy does not consolidate this node.
	CodeConsolidationDisabled Code = "ConsolidationDisabled"
	// CodeUnconsolidatable: consolidation found nothing better (no room, no cheaper node, ...).
	CodeUnconsolidatable Code = "Unconsolidatable"
	// CodeUnschedulable: a drifted node's pods cannot be rescheduled.
	CodeUnschedulable Code = "Unschedulable"
	// CodeUnpriced: the node's offering price is unknown, so it cannot be compared.
	CodeUnpriced Code = "Unpriced"
	// CodeDoNotRepair: the node carries karpenter.sh/do-not-repair.
	CodeDoNotRepair Code = "DoNotRepair"
	// CodeNodeRepairBlocked: node repair is stopped in the node's NodePool,
	// too many of its nodes are unhealthy (upstream's event reason).
	CodeNodeRepairBlocked Code = "NodeRepairBlocked"
)

// Explanation says why a node a method wanted was not disrupted.
type Explanation struct {
	Node    *Node
	Method  Method
	Code    Code
	Message string
}

// Blocking reports whether the explanation is a block (a rule or budget keeps
// the node) rather than a consolidation finding nothing better; upstream's
// event reasons are DisruptionBlocked and Unconsolidatable respectively.
func (e *Explanation) Blocking() bool {
	switch e.Code {
	case CodeUnconsolidatable, CodeConsolidationDisabled, CodeUnpriced:
		return false
	}
	return true
}

// BudgetStatus is a NodePool's budget for one reason at Input.Now.
type BudgetStatus struct {
	NodePool string
	Reason   v1.DisruptionReason
	// Limit is the most restrictive active budget (before subtracting nodes
	// already disrupting); -1 when no budget applies.
	Limit int
	// Disrupting counts the pool's nodes already disrupting or NotReady.
	Disrupting int
	// Allowed is what this pass may still start: max(0, Limit - Disrupting).
	Allowed int
	// Message explains a zero Allowed ("" otherwise).
	Message string
}

// Result of a pass.
type Result struct {
	// Decision is nil when no method found anything to do.
	Decision *Decision
	// Explanations, one per node a method wanted but did not disrupt, in a
	// deterministic order.
	Explanations []*Explanation
	// Eligible counts, per reason, the nodes that passed every rule (before budgets).
	Eligible map[v1.DisruptionReason]int
	// Budgets per NodePool and reason.
	Budgets []BudgetStatus
	// TimedOut lists the methods that stopped at Options.MaxSimulationWork.
	TimedOut []Method
	// SimulationWork is the work the pass's simulations took.
	SimulationWork int
	// Simulations counts calls to the solver.
	Simulations int
	// PartitionedSimulations counts the simulations split into independent
	// solves (partition.go), each counted in Simulations.
	PartitionedSimulations int
	// Moves are the consolidation moves the pass found, scored, in order:
	// those Balanced refused, and the one decided.
	Moves []Move
}
