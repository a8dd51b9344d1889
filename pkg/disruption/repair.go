package disruption

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// MethodRepair repairs unhealthy nodes (NodeRepair gate): a node whose Node
// has a condition matching one of the cloud provider's repair policies for
// longer than the policy's toleration. It runs first, as upstream's: fixing a
// fault comes before any discretionary change. Like drift it acts on one node
// per command, replacing it first when its pods need room, and consumes the
// Unhealthy budget (only for initialized nodes: one that never initialized runs
// nothing to protect). A policy whose action is RebootNode reboots the node in
// place instead (Decision.Reboot): no replacement, no simulation; a node
// already rebooted RebootsBeforeReplacement times within RebootHistoryWindow
// is replaced instead, and a reboot that does not bring the node back
// replaces it too (the reboot controller's part). With TerminateFirstRepair,
// an unhealthy node of a static NodePool at its node limit is deleted before
// its replacement launches. It differs from the other methods in its rules:
//   - karpenter.sh/do-not-disrupt on the Node or NodeClaim does not stop it
//     (it was never meant to strand a broken node); karpenter.sh/do-not-repair
//     on the Node does;
//   - a node that registered but never initialized is repaired too;
//   - pods that block eviction (PDBs, karpenter.sh/do-not-disrupt) stop it
//     only when nothing bounds the drain: with the policy's or the NodeClaim's
//     terminationGracePeriod it goes ahead, and the drain is bounded by the
//     lesser of the two (0: the pods are deleted at once);
//   - when more than 20% of a NodePool's nodes are unhealthy (any condition a
//     policy covers, toleration or not), it stops in that NodePool: a
//     correlated failure is not fixed by replacing nodes.
//
// Candidates are taken in order of their score: the rank of the policy's
// priority among the set's priorities, plus the time since the policy became
// eligible in units of 30 minutes; then the cheaper to disrupt, then by name.
var MethodRepair Method = repair{}

// RepairUnhealthyThreshold is upstream's share of a NodePool's nodes that may
// be unhealthy before repair stops in it, as a percentage (rounded up: one
// unhealthy node in a small pool does not stop it).
const RepairUnhealthyThreshold = 20

// RebootHistoryWindow and RebootsBeforeReplacement are upstream's: a node
// whose repair asked for this many reboots within the window is replaced
// instead of rebooted again.
const (
	RebootHistoryWindow      = 24 * time.Hour
	RebootsBeforeReplacement = 2
)

// repairAging is upstream's aging constant of the repair score: a candidate
// eligible this long ago gains one rank.
const repairAging = 30 * time.Minute

// Repair describes a repair decision's node: the condition it is repaired for
// and how its drain is bounded.
type Repair struct {
	Condition corev1.NodeConditionType
	Status    corev1.ConditionStatus
	Reason    string
	// Action is what the decision does: RebootNode for a reboot (see
	// Decision.Reboot), ReplaceNode otherwise.
	Action cloudprovider.RepairAction
	// Escalated: the policy asked for a reboot, but the node was already
	// rebooted RebootsBeforeReplacement times within RebootHistoryWindow, so
	// it is replaced.
	Escalated bool
	// TerminationGracePeriod is the drain bound the deletion (or the reboot's
	// drain) applies: the
	// lesser of the policy's and the NodeClaim's terminationGracePeriod, 0 for
	// a forceful policy, nil when the policy sets none (the NodeClaim's own
	// applies).
	TerminationGracePeriod *time.Duration
}

// ValidateRepairPolicies checks a provider's policy set as upstream does at
// start-up: known condition statuses and actions, no negative durations,
// priorities within [0, 100], reason expressions that compile, and exactly
// one fallback (a policy without ReasonRegex), whose action replaces.
func ValidateRepairPolicies(ps []cloudprovider.RepairPolicy) error {
	if len(ps) == 0 {
		return errors.New("node repair requires the cloud provider to define repair policies, it defines none")
	}
	_, err := compileRepairPolicies(ps)
	return err
}

type repairKey struct {
	t corev1.NodeConditionType
	s corev1.ConditionStatus
}

type repairPolicy struct {
	cloudprovider.RepairPolicy
	re   *regexp.Regexp
	rank int
}

func (rp *repairPolicy) action() cloudprovider.RepairAction {
	if rp.Action == "" {
		return cloudprovider.ReplaceNode
	}
	return rp.Action
}

// repairMatcher is a compiled policy set: the narrower policies per condition
// type and status, and the fallback.
type repairMatcher struct {
	groups   map[repairKey][]*repairPolicy
	fallback *repairPolicy
}

// compileRepairPolicies compiles what it can and reports everything wrong
// with the set. It returns nil for an empty set.
func compileRepairPolicies(ps []cloudprovider.RepairPolicy) (*repairMatcher, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	prios := map[int]bool{}
	for _, p := range ps {
		prios[p.Priority] = true
	}
	sorted := make([]int, 0, len(prios))
	for pr := range prios {
		sorted = append(sorted, pr)
	}
	sort.Ints(sorted)
	rank := map[int]int{}
	for i, pr := range sorted {
		rank[pr] = i
	}
	m := &repairMatcher{groups: map[repairKey][]*repairPolicy{}}
	var errs []error
	for i, p := range ps {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("repair policy %d (%s=%s): %s", i, p.ConditionType, p.ConditionStatus, fmt.Sprintf(format, args...)))
		}
		if p.ConditionType == "" {
			bad("no condition type")
		}
		switch p.ConditionStatus {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			bad("condition status %q is not True, False or Unknown", p.ConditionStatus)
		}
		if p.TolerationDuration < 0 {
			bad("negative toleration %s", p.TolerationDuration)
		}
		if p.TerminationGracePeriod != nil && *p.TerminationGracePeriod < 0 {
			bad("negative termination grace period %s", *p.TerminationGracePeriod)
		}
		if p.Priority < 0 || p.Priority > 100 {
			bad("priority %d is outside [0, 100]", p.Priority)
		}
		rp := &repairPolicy{RepairPolicy: p, rank: rank[p.Priority]}
		if a := rp.action(); a != cloudprovider.ReplaceNode && a != cloudprovider.RebootNode {
			bad("unknown action %q", a)
		}
		key := repairKey{p.ConditionType, p.ConditionStatus}
		if _, ok := m.groups[key]; !ok {
			m.groups[key] = nil
		}
		if p.ReasonRegex == "" {
			if m.fallback != nil {
				bad("a second fallback (a policy without a reason expression)")
				continue
			}
			m.fallback = rp
			continue
		}
		re, err := regexp.Compile(p.ReasonRegex)
		if err != nil {
			bad("reason expression: %v", err)
			continue
		}
		rp.re = re
		m.groups[key] = append(m.groups[key], rp)
	}
	if m.fallback == nil {
		errs = append(errs, errors.New("the repair policy set has no fallback (a policy without a reason expression)"))
	} else if m.fallback.action() != cloudprovider.ReplaceNode {
		errs = append(errs, fmt.Errorf("the fallback repair policy must replace, it asks for %s", m.fallback.action()))
	}
	return m, errors.Join(errs...)
}

// repairResult is what the policies make of a Node's conditions at a time.
type repairResult struct {
	// unhealthy: a condition has a type and status the set covers, whatever
	// its toleration (what the NodePool-wide stop counts).
	unhealthy bool
	// eligible: a policy's toleration has elapsed; the fields below are set.
	eligible bool
	action   cloudprovider.RepairAction
	// The selected policy's condition.
	condition  corev1.NodeConditionType
	status     corev1.ConditionStatus
	reason     string
	priority   int
	eligibleAt time.Time
	// The shortest drain bound of the eligible policies.
	drain          *time.Duration
	drainCondition corev1.NodeConditionType
	drainAt        time.Time
	// The score: rank plus age in units of repairAging.
	scoreRank int
	scoreAt   time.Time
}

func (r *repairResult) score(now time.Time) float64 {
	if !r.eligible {
		return 0
	}
	return float64(r.scoreRank) + float64(now.Sub(r.scoreAt))/float64(repairAging)
}

// resolve matches each condition of the Node against the set: a narrower
// policy of its type and status whose expression matches its reason, or else
// the fallback; and merges the eligible matches as upstream does. A
// toleration is counted from no earlier than notBefore (the end of the node's
// last reboot, zero if none): a reboot gets its own toleration to clear a
// fault. The most
// disruptive action wins (replace over reboot), then the higher priority,
// then the one eligible first, then the condition type's name; the shortest
// drain bound of all eligible matches applies; the best score counts.
func (m *repairMatcher) resolve(node *corev1.Node, now, notBefore time.Time) repairResult {
	var r repairResult
	created := node.CreationTimestamp.Time
	for _, c := range node.Status.Conditions {
		narrow, ok := m.groups[repairKey{c.Type, c.Status}]
		if !ok {
			continue
		}
		r.unhealthy = true
		since := c.LastTransitionTime.Time
		if since.Before(created) {
			since = created
		}
		if since.Before(notBefore) {
			since = notBefore
		}
		matched := false
		for _, rp := range narrow {
			if rp.re.MatchString(c.Reason) {
				matched = true
				r.merge(rp, c, since.Add(rp.TolerationDuration), now)
			}
		}
		if !matched && m.fallback != nil {
			r.merge(m.fallback, c, since.Add(m.fallback.TolerationDuration), now)
		}
	}
	return r
}

func (r *repairResult) merge(rp *repairPolicy, c corev1.NodeCondition, at, now time.Time) {
	if at.After(now) {
		return
	}
	first := !r.eligible
	if first || float64(rp.rank)+float64(now.Sub(at))/float64(repairAging) > r.score(now) {
		r.scoreRank, r.scoreAt = rp.rank, at
	}
	if d := rp.TerminationGracePeriod; d != nil {
		shorter := false
		switch {
		case r.drain == nil:
			shorter = true
		case *d != *r.drain:
			shorter = *d < *r.drain
		case !at.Equal(r.drainAt):
			shorter = at.Before(r.drainAt)
		default:
			shorter = c.Type < r.drainCondition
		}
		if shorter {
			r.drain, r.drainCondition, r.drainAt = d, c.Type, at
		}
	}
	a := rp.action()
	selected := first || (a == cloudprovider.ReplaceNode && r.action == cloudprovider.RebootNode)
	if !first && a == r.action {
		switch {
		case rp.Priority != r.priority:
			selected = rp.Priority > r.priority
		case !at.Equal(r.eligibleAt):
			selected = at.Before(r.eligibleAt)
		default:
			selected = c.Type < r.condition
		}
	}
	r.eligible = true
	if selected {
		r.action, r.condition, r.status, r.reason, r.priority, r.eligibleAt = a, c.Type, c.Status, c.Reason, rp.Priority, at
	}
}

// drainBound is the bound the node's deletion applies (see Repair).
func (n *node) drainBound() *time.Duration {
	d := n.repair.drain
	if d == nil {
		return nil
	}
	out := *d
	if tgp := n.NodeClaim.Spec.TerminationGracePeriod; tgp != nil && tgp.Duration < out {
		out = tgp.Duration
	}
	return &out
}

type repair struct{}

func (repair) String() string              { return "repair" }
func (repair) Reason() v1.DisruptionReason { return v1.DisruptionReasonUnhealthy }

// ConsolidationType: repair does not consolidate.
func (repair) ConsolidationType() string { return "" }

// Validated: a condition held past its toleration does not flicker.
func (repair) Validated() bool { return false }
func (repair) Simulates() bool { return true }
func (repair) Narrows() bool   { return false }

// graceful is not asked: repair has its own rules (block).
func (repair) graceful() bool { return true }

func (repair) wants(n *node) (bool, *block) { return n.repair.eligible, nil }

func (repair) revalidate(*pass, []*node, *Decision) (bool, string) { return true, "" }

// ruled is a method with rules of its own in place of the graceful or
// eventual ones.
type ruled interface {
	block(p *pass, n *node) *block
}

// block is repair's rules (see MethodRepair).
func (repair) block(p *pass, n *node) *block {
	if n.NodeClaim == nil || n.Node.Node == nil || n.Existing == nil || n.Deleting || n.MarkedForDeletion || n.rebooting {
		return silent
	}
	if n.pool == nil {
		if n.NodePool == "" {
			return silent
		}
		return &block{CodeNodePoolNotFound, fmt.Sprintf("nodepool %s of node %s not found", n.NodePool, n.Name)}
	}
	if !n.Initialized {
		// A node that never initialized is repaired once it registered (until
		// then the NodeClaim's registration timeout owns it), even while
		// pending pods are nominated to it: provisioning keeps nominating it.
		if n.Node.Node.Labels[v1.NodeRegisteredLabelKey] != "true" {
			return &block{CodeNotInitialized, fmt.Sprintf("node %s is unhealthy (%s) but has not registered yet", n.Name, n.repair.describe())}
		}
	} else if n.Nominated {
		return &block{CodeNominated, fmt.Sprintf("node %s is nominated for pending pods", n.Name)}
	}
	if n.Node.Node.Annotations[v1.DoNotRepairAnnotationKey] == "true" {
		return &block{CodeDoNotRepair, fmt.Sprintf("node %s is unhealthy (%s) but has %s", n.Name, n.repair.describe(), v1.DoNotRepairAnnotationKey)}
	}
	if n.repair.drain != nil || n.NodeClaim.Spec.TerminationGracePeriod != nil {
		return nil
	}
	for _, pod := range n.Pods() {
		if msg, ok := doNotDisrupt(pod, p.in.Now, p.in.Events); ok {
			return &block{CodeDoNotDisrupt, msg + ", and repair needs a termination grace period to go past blocking pods"}
		}
	}
	for _, pod := range n.Pods() {
		if msg, ok := p.pdbBlocks(pod); ok {
			return &block{CodePodDisruptionBudget, msg + ", and repair needs a termination grace period to go past blocking pods"}
		}
	}
	return nil
}

func (r *repairResult) describe() string {
	s := fmt.Sprintf("%s=%s", r.condition, r.status)
	if r.reason != "" {
		s += ", reason " + r.reason
	}
	return s
}

// unhealthyPools returns, per NodePool past the threshold, its unhealthy and
// total node counts. Every Node labelled with the NodePool counts.
func (p *pass) unhealthyPools() map[string][2]int {
	total, bad := map[string]int{}, map[string]int{}
	for _, n := range p.nodes {
		if n.Node.Node == nil {
			continue
		}
		pool := n.Node.Node.Labels[v1.NodePoolLabelKey]
		if pool == "" {
			continue
		}
		total[pool]++
		if n.repair.unhealthy {
			bad[pool]++
		}
	}
	out := map[string][2]int{}
	for pool, t := range total {
		if limit := (t*RepairUnhealthyThreshold + 99) / 100; bad[pool] > limit {
			out[pool] = [2]int{bad[pool], t}
		}
	}
	return out
}

func (m repair) decide(p *pass) *Decision {
	if p.repairs == nil {
		return nil
	}
	cands := p.candidates(m)
	if len(cands) == 0 {
		return nil
	}
	now := p.in.Now
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if sa, sb := a.repair.score(now), b.repair.score(now); sa != sb {
			return sa > sb
		}
		if a.cost != b.cost {
			return a.cost < b.cost
		}
		return a.Name < b.Name
	})
	stopped := p.unhealthyPools()
	for _, n := range cands {
		why := n.repair.describe()
		if s, ok := stopped[n.pool.NodePool.Name]; ok {
			p.explain(n, m, CodeNodeRepairBlocked, fmt.Sprintf("node %s is unhealthy (%s) but repair is stopped in nodepool %s: %d of its %d nodes are unhealthy, more than %d%%",
				n.Name, why, n.pool.NodePool.Name, s[0], s[1], RepairUnhealthyThreshold))
			continue
		}
		if n.Initialized {
			if b := p.budget(n, m.Reason()); b.Allowed == 0 {
				p.explain(n, m, CodeBudget, b.Message)
				continue
			}
		}
		action, escalated := n.repair.action, false
		if action == cloudprovider.RebootNode && p.in.RecentReboots[n.NodeClaim.UID] >= RebootsBeforeReplacement {
			action, escalated = cloudprovider.ReplaceNode, true
		}
		since := now.Sub(n.repair.eligibleAt).Round(time.Second)
		rep := &Repair{Condition: n.repair.condition, Status: n.repair.status, Reason: n.repair.reason, Action: action,
			Escalated: escalated, TerminationGracePeriod: n.drainBound()}
		if escalated {
			why += fmt.Sprintf(", rebooted %d times in the last %s", p.in.RecentReboots[n.NodeClaim.UID], RebootHistoryWindow)
		}
		if action == cloudprovider.RebootNode {
			// The instance stays: nothing is removed, nothing added.
			return &Decision{Method: m, Candidates: []*Node{n.Node}, Repair: rep, Reboot: true,
				Explanation: fmt.Sprintf("node %s is unhealthy (%s, past its toleration by %s): rebooting it in place, %s", n.Name, why, since, describeRebootDrain(rep.TerminationGracePeriod, n.NodeClaim))}
		}
		if n.pool.NodePool.Spec.Replicas != nil {
			if d := p.staticRepair(m, n, why, since, rep); d != nil {
				return d
			}
			continue
		}
		if p.overWork() {
			p.timedOut(m)
			return nil
		}
		sim, _ := p.simulate([]*node{n}, nil)
		if !sim.ok {
			if id := p.reservationOf(n); id != "" && p.in.Options.TerminateFirstRepair && p.fitsOnceFreed(n, id) {
				return &Decision{Method: m, Candidates: []*Node{n.Node}, CandidatesPrice: priceOf([]*node{n}), Repair: rep, TerminateFirstReason: TerminateFirstNoReservedCapacity,
					Explanation: fmt.Sprintf("node %s is unhealthy (%s, past its toleration by %s): capacity reservation %s has no free slot and its pods can only go back into it, so it is deleted first (TerminateFirstRepair) and its slot refilled", n.Name, why, since, id)}
			}
			p.explain(n, m, CodeUnschedulable, fmt.Sprintf("node %s is unhealthy (%s) but its pods cannot be rescheduled: %v", n.Name, why, sim.err))
			continue
		}
		d := &Decision{Method: m, Candidates: []*Node{n.Node}, Replacements: sim.replacements, CandidatesPrice: priceOf([]*node{n}), Repair: rep}
		for _, r := range sim.replacements {
			d.ReplacementsPrice += r.Price
		}
		switch {
		case len(sim.replacements) == 0:
			d.Explanation = fmt.Sprintf("node %s is unhealthy (%s, past its toleration by %s): deleting it", n.Name, why, since)
		default:
			d.Explanation = fmt.Sprintf("node %s is unhealthy (%s, past its toleration by %s): replacing it with %s", n.Name, why, since, describeClaims(sim.replacements))
		}
		return d
	}
	return nil
}

// describeRebootDrain says how the drain before a reboot is bounded.
func describeRebootDrain(bound *time.Duration, nc *v1.NodeClaim) string {
	if bound == nil && nc.Spec.TerminationGracePeriod != nil {
		bound = &nc.Spec.TerminationGracePeriod.Duration
	}
	switch {
	case bound == nil:
		return "after draining it"
	case *bound == 0:
		return "without draining it"
	}
	return fmt.Sprintf("after draining it for at most %s", *bound)
}

// staticRepair replaces an unhealthy node of a static NodePool
// (spec.replicas) as staticReplace does, with the TerminateFirstRepair gate.
func (p *pass) staticRepair(m Method, n *node, why string, since time.Duration, rep *Repair) *Decision {
	return p.staticReplace(m, n, staticCase{
		subject:  fmt.Sprintf("node %s is unhealthy (%s)", n.Name, why),
		decided:  fmt.Sprintf("node %s is unhealthy (%s, past its toleration by %s)", n.Name, why, since),
		gate:     p.in.Options.TerminateFirstRepair,
		gateName: "TerminateFirstRepair",
		repair:   rep,
	})
}
