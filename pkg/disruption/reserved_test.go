package disruption_test

import (
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
