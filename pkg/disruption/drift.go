package disruption

import (
	"fmt"
	"sort"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// MethodDrift replaces nodes whose NodeClaim has the Drifted condition, one per
// command, empty ones first, then those drifted longest, by as many new nodes
// as their pods need.
var MethodDrift Method = drift{}

type drift struct{}

func (drift) String() string              { return "drift" }
func (drift) Reason() v1.DisruptionReason { return v1.DisruptionReasonDrifted }

// ConsolidationType: drift does not consolidate.
func (drift) ConsolidationType() string { return "" }

// Validated: the Drifted condition does not flicker, so a decision starts at once.
func (drift) Validated() bool { return false }

func (drift) Simulates() bool { return true }
func (drift) Narrows() bool   { return false }

// graceful: drift is eventual; a terminationGracePeriod lets it past blocking pods.
func (drift) graceful() bool { return false }

func (drift) wants(n *node) (bool, *block) { return n.drifted, nil }

func (drift) revalidate(*pass, []*node, *Decision) (bool, string) { return true, "" }

func (m drift) decide(p *pass) *Decision {
	cands := p.candidates(m)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.empty() != b.empty() {
			return a.empty()
		}
		if !a.driftedAt.Equal(b.driftedAt) {
			return a.driftedAt.Before(b.driftedAt)
		}
		return a.Name < b.Name
	})
	for _, n := range cands {
		b := p.budget(n, m.Reason())
		if b.Allowed == 0 {
			p.explain(n, m, CodeBudget, b.Message)
			continue
		}
		if p.overWork() {
			p.timedOut(m)
			return nil
		}
		why := n.driftReason
		if why == "" {
			why = "Drifted"
		}
		if n.pool.NodePool.Spec.Replicas != nil {
			if d := p.staticDrift(m, n, why); d != nil {
				return d
			}
			continue
		}
		sim, _ := p.simulate([]*node{n}, nil)
		if !sim.ok {
			if id := p.reservationOf(n); id != "" && p.in.Options.TerminateFirstDrift && p.fitsOnceFreed(n, id) {
				return &Decision{Method: m, Candidates: []*Node{n.Node}, CandidatesPrice: priceOf([]*node{n}), TerminateFirstReason: TerminateFirstNoReservedCapacity,
					Explanation: fmt.Sprintf("node %s drifted (%s): capacity reservation %s has no free slot and its pods can only go back into it, so it is deleted first (TerminateFirstDrift) and its slot refilled", n.Name, why, id)}
			}
			p.explain(n, m, CodeUnschedulable, fmt.Sprintf("node %s drifted (%s) but its pods cannot be rescheduled: %v", n.Name, why, sim.err))
			continue
		}
		d := &Decision{Method: m, Candidates: []*Node{n.Node}, Replacements: sim.replacements, CandidatesPrice: priceOf([]*node{n})}
		for _, r := range sim.replacements {
			d.ReplacementsPrice += r.Price
		}
		switch {
		case n.empty():
			d.Explanation = fmt.Sprintf("node %s drifted (%s) and is empty: deleting it", n.Name, why)
		case len(sim.replacements) == 0:
			d.Explanation = fmt.Sprintf("node %s drifted (%s): its pods fit on other nodes, deleting it", n.Name, why)
		default:
			d.Explanation = fmt.Sprintf("node %s drifted (%s): replacing it with %s", n.Name, why, describeClaims(sim.replacements))
		}
		return d
	}
	return nil
}

// staticDrift replaces a drifted node of a static NodePool (spec.replicas)
// as staticReplace does, with the TerminateFirstDrift gate.
func (p *pass) staticDrift(m Method, n *node, why string) *Decision {
	subject := fmt.Sprintf("node %s drifted (%s)", n.Name, why)
	return p.staticReplace(m, n, staticCase{subject: subject, decided: subject, gate: p.in.Options.TerminateFirstDrift, gateName: "TerminateFirstDrift"})
}

// staticCase is what staticReplace needs to know of the method replacing a
// static pool's node.
type staticCase struct {
	// subject names the node and why it is replaced, in explanations;
	// decided, in a decision's.
	subject, decided string
	// gate is the method's terminate-first feature gate, gateName its name.
	gate     bool
	gateName string
	// repair is the decision's Repair (nil for drift).
	repair *Repair
}

// staticReplace replaces a node of a static NodePool (spec.replicas) as
// upstream's drift and repair do: with a node of the pool launched first,
// while the pool's NodeClaims stay within limits.nodes. With the method's
// terminate-first gate, a Ready pool that cannot stage the replacement
// deletes the node first and is refilled to its replicas after: when every
// offering its template allows is a full capacity reservation and the node
// holds a slot in one still offered (no-reserved-capacity; a node holding
// none frees nothing the refill could use, so it waits), else when the pool
// is at its node limit (static-at-limit). Otherwise it waits, explained.
// Nothing is replaced while the pool is being scaled down.
func (p *pass) staticReplace(m Method, n *node, c staticCase) *Decision {
	np := n.pool.NodePool
	all, active := p.staticCounts(np.Name)
	if active > int(*np.Spec.Replicas) {
		p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: static nodepool %s is scaling down to %d replicas first", c.subject, np.Name, *np.Spec.Replicas))
		return nil
	}
	d := &Decision{Method: m, Candidates: []*Node{n.Node}, CandidatesPrice: priceOf([]*node{n}), Repair: c.repair}
	// Static provisioning refuses a NotReady or deleting pool: deleting first
	// there would leave the node's workload without its refill.
	refillable := np.StatusConditions().Root().IsTrue() && np.DeletionTimestamp == nil
	// Full reservations are looked at first (only with the gate: without it
	// the only way is a replacement launched first), so that the delete-first
	// path never counts against limits.nodes.
	if c.gate {
		if full, none, held := p.staticReservations(n); full {
			if none {
				p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: static nodepool %s admits no instance type with an offering to replace it", c.subject, np.Name))
				return nil
			}
			msg := fmt.Sprintf("static nodepool %s's capacity reservations are full and cannot stage a replacement", np.Name)
			switch {
			case held == "":
				p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: %s, and the node holds no slot in one still offered, so deleting it would free none", c.subject, msg))
				return nil
			case !refillable:
				p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: %s, and the pool is not Ready to be refilled", c.subject, msg))
				return nil
			}
			d.Explanation = fmt.Sprintf("%s: %s, so it is deleted first (%s) and the pool refilled to %d replicas into the slot it frees in capacity reservation %s",
				c.decided, msg, c.gateName, *np.Spec.Replicas, held)
			d.TerminateFirstReason = TerminateFirstNoReservedCapacity
			return d
		}
	}
	limit, limited := np.Spec.Limits[v1.ResourceNodes]
	if !limited || int64(all) < limit.Value() {
		claim := p.in.StaticClaims[np.Name]
		if claim == nil {
			p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: static nodepool %s admits no instance type with an available offering to replace it", c.subject, np.Name))
			return nil
		}
		d.Replacements, d.ReplacementsPrice = []*scheduling.NewClaim{claim}, claim.Price
		d.Explanation = fmt.Sprintf("%s: replacing it with a node of static nodepool %s", c.decided, np.Name)
		return d
	}
	atLimit := fmt.Sprintf("static nodepool %s is at its node limit (limits.nodes %s) and cannot stage a replacement", np.Name, limit.String())
	if !c.gate || !refillable {
		p.explain(n, m, CodeUnschedulable, fmt.Sprintf("%s: %s", c.subject, atLimit))
		return nil
	}
	d.Explanation = fmt.Sprintf("%s: %s, so it is deleted first (%s) and the pool refilled to %d replicas", c.decided, atLimit, c.gateName, *np.Spec.Replicas)
	d.TerminateFirstReason = TerminateFirstStaticAtLimit
	return d
}

// staticCounts counts a NodePool's NodeClaims: all of them (what limits.nodes
// bounds), and those neither being deleted nor held by a disruption command.
func (p *pass) staticCounts(pool string) (all, active int) {
	for _, o := range p.nodes {
		if o.NodeClaim == nil || o.NodePool != pool {
			continue
		}
		all++
		if o.NodeClaim.DeletionTimestamp == nil && !o.MarkedForDeletion {
			active++
		}
	}
	return all, active
}
