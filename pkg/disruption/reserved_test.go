package disruption_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

const reservationKey = "example.com/reservation-id"

// reservedTypes are standardTypes whose "m" also has a reserved offering in
// reservation cr-1 with free slots (0: full, the node under test holding one).
func reservedTypes(free int, available bool) []*scheduling.InstanceType {
	its := standardTypes()
	m := its[1]
	m.Offerings = append(m.Offerings, scheduling.Offering{Zone: zone, CapacityType: scheduling.CapacityTypeReserved, Price: 0.00001, Available: available,
		ReservationID: "cr-1", ReservationCapacity: free, Requirements: scheduling.NewRequirements(scheduling.NewRequirement(reservationKey, corev1.NodeSelectorOpIn, "cr-1"))})
	return its
}

var reservedOnly = fixtures.WithRequirements(fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))

// inReservation labels the node as running in reservation cr-1.
func inReservation(n *disruption.Node) {
	for _, l := range []map[string]string{n.Node.Labels, n.NodeClaim.Labels} {
		l[v1.CapacityTypeLabelKey] = v1.CapacityTypeReserved
		l[reservationKey] = "cr-1"
	}
}

// reservedWorld: pool "r" launches only into reservation cr-1; node "a" runs
// in it with a pod that needs a node of the pool.
func reservedWorld(t *testing.T, free int, available bool, opts ...nodeOpt) *world {
	w := newWorld(t)
	w.pool("r", reservedTypes(free, available), never, reservedOnly)
	w.pod(w.node("a", "r", "m", append([]nodeOpt{inReservation, notConsolidatable}, opts...)...), "web", "3")
	return w
}

// A drifted node in a full reservation, whose pods can only go back into it:
// with TerminateFirstDrift it is deleted first (no-reserved-capacity), its
// slot then taken by the replacement; without, it waits, explained.
func TestDriftTerminatesFirstInAFullReservation(t *testing.T) {
	driftedNode := drifted(now.Add(-time.Hour))

	w := reservedWorld(t, 0, true, driftedNode)
	r := w.run()
	if r.Decision != nil {
		t.Fatalf("without TerminateFirstDrift want no decision, got\n%s", describe(r))
	}

	w = reservedWorld(t, 0, true, driftedNode)
	w.in.Options.TerminateFirstDrift = true
	r = w.run()
	d := r.Decision
	if d == nil || d.Method != disruption.MethodDrift || d.Action() != disruption.ActionTerminateFirst || d.TerminateFirstReason != disruption.TerminateFirstNoReservedCapacity ||
		len(d.Replacements) != 0 || len(d.Candidates) != 1 || d.Candidates[0].Name != "a" {
		t.Fatalf("want a terminate-first delete of a (no-reserved-capacity), got\n%s", describe(r))
	}
	if disruption.TerminateFirstNoReservedCapacity != "no-reserved-capacity" || !strings.Contains(d.Explanation, "cr-1") {
		t.Fatalf("reason %q, explanation %q", d.TerminateFirstReason, d.Explanation)
	}

	// A free slot: the replacement launches first, into the reservation.
	w = reservedWorld(t, 1, true, driftedNode)
	w.in.Options.TerminateFirstDrift = true
	r = w.run()
	if d := r.Decision; d == nil || d.Action() != disruption.ActionReplace || d.TerminateFirstReason != "" || len(d.Replacements) != 1 {
		t.Fatalf("with a free slot want a replace, got\n%s", describe(r))
	}

	// A reservation unusable for another reason: freeing the slot would not
	// help, nothing is deleted.
	w = reservedWorld(t, 0, false, driftedNode)
	w.in.Options.TerminateFirstDrift = true
	if r := w.run(); r.Decision != nil {
		t.Fatalf("with the reservation unavailable want no decision, got\n%s", describe(r))
	}
}

// An unhealthy node in a full reservation is deleted first with
// TerminateFirstRepair.
func TestRepairTerminatesFirstInAFullReservation(t *testing.T) {
	build := func() *world {
		w := newWorld(t)
		w.in.Options.NodeRepair = true
		w.in.RepairPolicies = testRepairPolicies()
		w.pool("r", reservedTypes(0, true), never, reservedOnly)
		w.pod(w.node("bad", "r", "m", inReservation, notReadyFor(time.Hour)), "web", "3")
		for _, n := range []string{"h1", "h2", "h3", "h4", "h5"} {
			w.pod(w.node(n, "r", "m", inReservation), "busy-"+n, "3")
		}
		return w
	}
	r := build().run()
	noRepair(t, r)

	w := build()
	w.in.Options.TerminateFirstRepair = true
	r = w.run()
	d := repairDecision(t, r, "bad")
	if d.Action() != disruption.ActionTerminateFirst || d.TerminateFirstReason != disruption.TerminateFirstNoReservedCapacity || len(d.Replacements) != 0 {
		t.Fatalf("want a terminate-first delete (no-reserved-capacity), got\n%s", describe(r))
	}
}

// staticReservedWorld: static pool "r" (as many replicas as nodes, limits.nodes
// when given, "at" for the node count)
// that launches only into reservation cr-1 with `free` slots, and two nodes
// the method wants: "a" holding a slot in cr-1 and "b" holding none. With
// repair, a and b are unhealthy and the pool has healthy nodes enough that
// repair is not stopped.
func staticReservedWorld(t *testing.T, repair bool, free int, available bool, limit string, opts ...poolOpt) *world {
	w := newWorld(t)
	replicas := int64(2)
	if repair {
		replicas = 10
	}
	if limit == "at" {
		limit = fmt.Sprint(replicas)
	}
	w.pool("r", reservedTypes(free, available), append([]poolOpt{never, static(replicas, limit), reservedOnly}, opts...)...)
	var wanted nodeOpt = drifted(now.Add(-time.Hour))
	if repair {
		w.in.Options.NodeRepair = true
		w.in.RepairPolicies = testRepairPolicies()
		wanted = notReadyFor(time.Hour)
		for _, n := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"} {
			w.node(n, "r", "m", inReservation)
		}
	}
	if free > 0 {
		// A launchable offering: the pool's replacement launched first.
		w.in.StaticClaims = map[string]*scheduling.NewClaim{"r": {Price: 0.00001}}
	}
	w.pod(w.node("a", "r", "m", inReservation, notConsolidatable, wanted), "web-a", "1")
	w.pod(w.node("b", "r", "m", notConsolidatable, wanted), "web-b", "1")
	return w
}

// A static pool whose every allowed offering is a full capacity reservation
// cannot stage a replacement: with the method's terminate-first gate, a node
// holding a slot in a reservation still offered is deleted first
// (no-reserved-capacity), even at limits.nodes; a node holding none waits,
// blocked; a pool with a free slot replaces first; without the gate nothing
// changes.
func TestStaticPoolTerminatesFirstOnFullReservations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		repair bool
		method disruption.Method
		gate   func(*disruption.Options)
	}{
		{"drift", false, disruption.MethodDrift, func(o *disruption.Options) { o.TerminateFirstDrift = true }},
		{"repair", true, disruption.MethodRepair, func(o *disruption.Options) { o.TerminateFirstRepair = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blockedOf := func(r *disruption.Result, node, contains string) {
				t.Helper()
				e := explanation(r, node)
				if e == nil || e.Method != tc.method || e.Code != disruption.CodeUnschedulable || !e.Blocking() || !strings.Contains(e.Message, contains) {
					t.Fatalf("want %s blocked by %s (%q), got\n%s", node, tc.method, contains, describe(r))
				}
			}
			const full = "static nodepool r's capacity reservations are full and cannot stage a replacement"

			// Full, a holds a slot: a is deleted first; b, which holds none,
			// is blocked.
			for _, limit := range []string{"", "10"} {
				w := staticReservedWorld(t, tc.repair, 0, true, limit)
				tc.gate(&w.in.Options)
				r := w.run()
				d := r.Decision
				if d == nil || d.Method != tc.method || d.Action() != disruption.ActionTerminateFirst || d.TerminateFirstReason != disruption.TerminateFirstNoReservedCapacity ||
					len(d.Replacements) != 0 || len(d.Candidates) != 1 || d.Candidates[0].Name != "a" {
					t.Fatalf("limit %q: want a terminate-first delete of a (no-reserved-capacity), got\n%s", limit, describe(r))
				}
				if !strings.Contains(d.Explanation, full) || !strings.Contains(d.Explanation, "cr-1") {
					t.Fatalf("explanation %q", d.Explanation)
				}
				if tc.repair && d.Repair == nil {
					t.Fatal("repair decision without its repair details")
				}
			}

			// Full checked before limits.nodes: at the limit it is still
			// no-reserved-capacity.
			w := staticReservedWorld(t, tc.repair, 0, true, "at")
			tc.gate(&w.in.Options)
			if r := w.run(); r.Decision == nil || r.Decision.TerminateFirstReason != disruption.TerminateFirstNoReservedCapacity {
				t.Fatalf("at its limit want no-reserved-capacity, got\n%s", describe(r))
			}

			// Full, only b wanted (a is healthy / not drifted): b is blocked.
			w = staticReservedWorld(t, tc.repair, 0, true, "")
			tc.gate(&w.in.Options)
			a := w.in.Nodes[len(w.in.Nodes)-2]
			if a.Name != "a" {
				t.Fatalf("node order: %s", a.Name)
			}
			a.NodeClaim.Status.Conditions = nil
			a.Node.Status.Conditions = nil
			r := w.run()
			if r.Decision != nil {
				t.Fatalf("want no decision, got\n%s", describe(r))
			}
			blockedOf(r, "b", full)

			// The reservation is not offered (unavailable): deleting a frees
			// nothing the refill could use, so it waits too.
			w = staticReservedWorld(t, tc.repair, 0, false, "")
			tc.gate(&w.in.Options)
			r = w.run()
			if r.Decision != nil {
				t.Fatalf("with the reservation unavailable want no decision, got\n%s", describe(r))
			}
			blockedOf(r, "a", full)

			// The pool is not Ready: it would not be refilled.
			w = staticReservedWorld(t, tc.repair, 0, true, "", fixtures.NodePoolFunc(func(np *v1.NodePool) {
				np.StatusConditions().SetFalse(v1.ConditionTypeNodeClassReady, "NotReady", "not ready")
			}))
			tc.gate(&w.in.Options)
			r = w.run()
			if r.Decision != nil {
				t.Fatalf("with the pool NotReady want no decision, got\n%s", describe(r))
			}
			blockedOf(r, "a", "not Ready")

			// A free slot: the replacement is launched first, as before.
			w = staticReservedWorld(t, tc.repair, 1, true, "")
			tc.gate(&w.in.Options)
			r = w.run()
			if d := r.Decision; d == nil || d.Method != tc.method || d.Action() != disruption.ActionReplace || d.TerminateFirstReason != "" || len(d.Replacements) != 1 {
				t.Fatalf("with a free slot want a replace, got\n%s", describe(r))
			}

			// Without the gate: nothing launchable, nothing deleted first.
			w = staticReservedWorld(t, tc.repair, 0, true, "")
			r = w.run()
			if r.Decision != nil {
				t.Fatalf("without the gate want no decision, got\n%s", describe(r))
			}
			if e := explanation(r, "a"); e == nil || !strings.Contains(e.Message, "admits no instance type with an available offering") {
				t.Fatalf("without the gate want a explained as before, got\n%s", describe(r))
			}
			// ... and at its node limit it waits as before.
			w = staticReservedWorld(t, tc.repair, 0, true, "at")
			r = w.run()
			if r.Decision != nil {
				t.Fatalf("without the gate at the limit want no decision, got\n%s", describe(r))
			}
			if e := explanation(r, "a"); e == nil || !strings.Contains(e.Message, "at its node limit") {
				t.Fatalf("without the gate at the limit want a explained as before, got\n%s", describe(r))
			}
		})
	}
}

// A static pool with an on-demand offering besides its full reservation does
// not depend on a reservation slot: it waits for that capacity as before.
func TestStaticPoolWithOtherCapacityIsNotReservationsFull(t *testing.T) {
	w := newWorld(t)
	w.in.Options.TerminateFirstDrift = true
	w.pool("r", reservedTypes(0, true), never, static(2, "2"), fixtures.WithRequirements(fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved, v1.CapacityTypeOnDemand)))
	w.in.StaticClaims = map[string]*scheduling.NewClaim{"r": {Price: 0.34}}
	w.pod(w.node("a", "r", "m", inReservation, notConsolidatable, drifted(now.Add(-time.Hour))), "web", "1")
	w.node("b", "r", "m", inReservation)
	r := w.run()
	if d := r.Decision; d == nil || d.TerminateFirstReason != disruption.TerminateFirstStaticAtLimit {
		t.Fatalf("want static-at-limit, got\n%s", describe(r))
	}
}
