package disruption

import (
	"strings"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Method is one way of disrupting nodes. Everything particular to a method
// lives in its value, defined in a file of its own (repair.go, emptiness.go,
// drift.go, multinode.go, singlenode.go): which nodes it wants, how it decides among
// them, what it is called and how its work is labelled. A pass, Validate, the
// controller and the orchestration queue only ever ask a Method; none of them
// names one.
//
// Method values are comparable (they are empty structs), so a Decision's
// Method can be compared with MethodDrift and used as a map key.
type Method interface {
	// String is the method's name in logs, explanations and validation
	// messages ("emptiness").
	String() string
	// Reason is the disruption reason the method acts for: the budget it
	// consumes and the reason recorded in the NodeClaim's DisruptionReason
	// condition. Metrics spell it with MetricReason.
	Reason() v1.DisruptionReason
	// ConsolidationType is upstream's consolidation_type metric label of the
	// method: "empty", "multi" or "single"; "" for a method that does not
	// consolidate (drift), which consolidation_timeouts_total does not count.
	ConsolidationType() string
	// Validated: the controller re-checks a decision of the method with
	// Validate on a fresh snapshot, ValidationDelay after taking it, before it
	// starts (pods arriving meanwhile show the decision was taken on a passing
	// moment). Drift is not: it acts on a condition that does not flicker.
	Validated() bool
	// Simulates: the method runs scheduling simulations, bounded by
	// Options.MaxSimulationWork; a pass that reaches the bound lists it in
	// Result.TimedOut.
	Simulates() bool
	// Narrows: a delete decision of the method may be narrowed when it is
	// validated (ValidateNarrowing): candidates no longer valid are dropped and
	// the rest, at least two, are consolidated afresh together, where any other
	// decision stands or falls whole. Multi-node consolidation narrows.
	Narrows() bool

	// graceful methods respect blocking pods whatever the NodeClaim's
	// terminationGracePeriod; an eventual one (drift) does not when one is set,
	// because the grace period bounds how long those pods can hold the node.
	graceful() bool
	// wants is the method's candidate filter: whether it would act on the node
	// (a managed node of an existing NodePool) were no rule in the way, and if
	// not, whether a person should be told why.
	wants(n *node) (bool, *block)
	// decide is the method's turn in a pass: a decision, or nil after
	// explaining, through the pass, the nodes it wanted but left alone.
	decide(p *pass) *Decision
	// revalidate is the method's own part of Validate, once the candidates
	// passed the filter, the rules and the budgets again: consolidation
	// simulates again. It says why not when the decision no longer holds.
	revalidate(p *pass, cands []*node, d *Decision) (bool, string)
}

// Methods in the order a pass tries them (upstream's, then repack consolidation); the first that decides
// wins. A new method is one file defining its value and one line here.
var Methods = []Method{
	MethodRepair,
	MethodEmptiness,
	MethodDrift,
	MethodMultiNodeConsolidation,
	MethodSingleNodeConsolidation,
	MethodRepackConsolidation,
}

// MethodsFor lists the methods a pass with these options tries: Methods,
// without repair unless the NodeRepair gate is on, and without repack
// consolidation when DisableRepackConsolidation is set.
func MethodsFor(o Options) []Method {
	out := make([]Method, 0, len(Methods))
	for _, m := range Methods {
		if (m == MethodRepair && !o.NodeRepair) || (m == MethodRepackConsolidation && o.DisableRepackConsolidation) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// ReasonsFor lists the reasons of MethodsFor(o), in their order: those a
// pass with these options reports budgets and eligibility for.
func ReasonsFor(o Options) []v1.DisruptionReason { return reasonsOf(MethodsFor(o)) }

// Reasons budgets are kept for: those of Methods, in their order (expiration
// is forceful and never budgeted).
var Reasons = reasonsOf(Methods)

func reasonsOf(ms []Method) []v1.DisruptionReason {
	var out []v1.DisruptionReason
	seen := map[v1.DisruptionReason]bool{}
	for _, m := range ms {
		if r := m.Reason(); !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// MetricReason spells a disruption reason as upstream's voluntary_disruption,
// nodeclaims_created and nodeclaims_disrupted metrics do, lower case
// ("Underutilized" -> "underutilized"). The nodepools_* gauges use the API's
// spelling instead.
func MetricReason(r v1.DisruptionReason) string { return strings.ToLower(string(r)) }
