package scheduling_test

import (
	"errors"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

const reservationKey = "example.com/reservation-id"

// reservedType is a 2-CPU type offered on-demand and spot in us-west-2a, plus one reserved
// offering per reservation id with the given free slots.
func reservedType(name string, slots map[string]int) *scheduling.InstanceType {
	it := itype(name, "amd64", 2, 4, 10, "us-west-2a")
	for _, id := range sortedIDs(slots) {
		it.Offerings = append(it.Offerings, scheduling.Offering{Zone: "us-west-2a", CapacityType: scheduling.CapacityTypeReserved, Price: 0.0001, Available: true,
			ReservationID: id, ReservationCapacity: slots[id], Requirements: scheduling.NewRequirements(req(reservationKey, in, id))})
	}
	return it
}

func sortedIDs(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// reservationCount tallies new claims per reservation id ("" for claims not narrowed to reserved).
func reservationCount(t *testing.T, res *scheduling.Results) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, c := range res.NewClaims {
		ct, _ := c.Requirements.Get(scheduling.LabelCapacityType)
		if v, ok := ct.Single(); ok && v == scheduling.CapacityTypeReserved {
			id, _ := c.Requirements.Get(reservationKey)
			v, ok := id.Single()
			if !ok {
				t.Fatalf("claim %s is reserved but not narrowed to one reservation: %s", c.Hostname, c.Requirements)
			}
			out[v]++
			continue
		}
		if ct.Has(scheduling.CapacityTypeReserved) {
			t.Fatalf("claim %s may still launch into a reservation: %s", c.Hostname, c.Requirements)
		}
		out[""]++
	}
	return out
}

func solveReserved(pool *scheduling.NodePool, n int) *scheduling.Results {
	// 1500m each: one pod per 2-CPU node.
	return scheduling.Solve(&scheduling.Input{Pods: pods(n, "p", "1500m", "1Gi"), NodePools: []*scheduling.NodePool{pool}})
}

func TestSolveNeverOverbooksAReservation(t *testing.T) {
	np := pool("default", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 2})}
	})
	res := solveReserved(np, 5)
	if len(res.PodErrors) != 0 {
		t.Fatalf("pod errors: %v", res.PodErrors)
	}
	got := reservationCount(t, res)
	if got["r-1"] != 2 || got[""] != 3 {
		t.Fatalf("claims per reservation = %v, want r-1: 2 and 3 outside any reservation", got)
	}
	for _, c := range res.NewClaims {
		if ct, _ := c.Requirements.Get(scheduling.LabelCapacityType); !ct.Has(scheduling.CapacityTypeReserved) && c.Price < 0.01 {
			t.Fatalf("fallback claim %s is priced as reserved: %v", c.Hostname, c.Price)
		}
	}
}

func TestSolveSpreadsClaimsOverReservations(t *testing.T) {
	np := pool("default", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 1, "r-2": 2})}
	})
	got := reservationCount(t, solveReserved(np, 5))
	if got["r-1"] != 1 || got["r-2"] != 2 || got[""] != 2 {
		t.Fatalf("claims per reservation = %v, want r-1: 1, r-2: 2, 2 outside", got)
	}
}

func TestSolveReservationSharedAcrossPoolsCountsOnce(t *testing.T) {
	a := pool("a", func(np *scheduling.NodePool) {
		np.Weight = 10
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 2})}
		np.Requirements = scheduling.NewRequirements(req(scheduling.LabelCapacityType, in, scheduling.CapacityTypeReserved))
	})
	b := pool("b", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 1})}
	})
	res := scheduling.Solve(&scheduling.Input{Pods: pods(4, "p", "1500m", "1Gi"), NodePools: []*scheduling.NodePool{a, b}})
	got := reservationCount(t, res)
	// The smaller figure holds for both pools: one reserved claim only.
	if got["r-1"] > 1 {
		t.Fatalf("claims per reservation = %v: r-1 has one free slot", got)
	}
}

func TestSolveReservedOnlyPoolStopsAtFreeSlots(t *testing.T) {
	np := pool("reserved", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 2})}
		np.Requirements = scheduling.NewRequirements(req(scheduling.LabelCapacityType, in, scheduling.CapacityTypeReserved))
	})
	res := solveReserved(np, 5)
	if got := reservationCount(t, res); got["r-1"] != 2 || len(res.NewClaims) != 2 {
		t.Fatalf("claims per reservation = %v, want 2 in r-1 and no other", got)
	}
	if len(res.PodErrors) != 3 {
		t.Fatalf("%d pod errors, want 3", len(res.PodErrors))
	}
	for p, err := range res.PodErrors {
		var full *scheduling.ReservationsFullError
		if !errors.As(err, &full) {
			t.Fatalf("pod %s: %v, want a ReservationsFullError", p.Name, err)
		}
	}
}

func TestSolveFullReservationLaunchesNothing(t *testing.T) {
	np := pool("default", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 0})}
	})
	if got := reservationCount(t, solveReserved(np, 2)); got["r-1"] != 0 || got[""] != 2 {
		t.Fatalf("claims per reservation = %v, want none in the full reservation", got)
	}
	onlyReserved := pool("reserved", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 0})}
		np.Requirements = scheduling.NewRequirements(req(scheduling.LabelCapacityType, in, scheduling.CapacityTypeReserved))
	})
	if res := solveReserved(onlyReserved, 1); len(res.NewClaims) != 0 || len(res.PodErrors) != 1 {
		t.Fatalf("a full reservation launched %d claims (%d pod errors)", len(res.NewClaims), len(res.PodErrors))
	}
}

// A claim narrowed to a reservation lists only the types that can launch into it, in its
// instance types and in its instance-type requirement alike.
func TestSolveReservedClaimListsOnlyReservedTypes(t *testing.T) {
	np := pool("default", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{reservedType("small", map[string]int{"r-1": 1}), itype("other", "amd64", 2, 4, 10, "us-west-2a")}
	})
	res := solveReserved(np, 1)
	if len(res.NewClaims) != 1 {
		t.Fatalf("%d claims, want 1", len(res.NewClaims))
	}
	c := res.NewClaims[0]
	it, _ := c.Requirements.Get(scheduling.LabelInstanceType)
	if len(c.InstanceTypes) != 1 || c.InstanceTypes[0].Name != "small" || it.Len() != 1 || !it.Has("small") {
		t.Fatalf("claim types %d, requirement %s; want small only", len(c.InstanceTypes), it)
	}
}
