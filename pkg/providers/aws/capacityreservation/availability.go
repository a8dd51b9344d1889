package capacityreservation

import (
	"sync"
	"sync/atomic"
)

// Availability counts, per reservation ID, the instances a reservation can
// still take, as upstream's provider does: EC2's AvailableInstanceCount from
// the last DescribeCapacityReservations, less the launches into it and plus
// the terminations out of it since. Between two answers from EC2 an instance
// launched into a reservation thus counts against it at once, so that the
// next scheduling decision does not plan a node into a slot it took.
// It is safe for concurrent use.
type Availability struct {
	mu         sync.Mutex
	counts     map[string]int
	terminated map[string]bool // instances whose slot was returned
	seq        atomic.Uint64
}

// maxRemembered bounds the terminations remembered to return each slot once.
const maxRemembered = 10000

// NewAvailability returns an empty count: every reservation is unknown.
func NewAvailability() *Availability {
	return &Availability{counts: map[string]int{}, terminated: map[string]bool{}}
}

// Count is the reservation's free slots and whether the reservation is known.
func (a *Availability) Count(id string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.counts[id]
	return n, ok
}

// Set records EC2's figure for the reservation (or, after EC2 refused a
// launch for want of capacity, zero).
func (a *Availability) Set(id string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.counts[id]; ok && old == n {
		return
	}
	a.counts[id] = max(n, 0)
	a.seq.Add(1)
}

// MarkLaunched takes one slot of a known reservation for an instance launched
// into it.
func (a *Availability) MarkLaunched(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := a.counts[id]; ok && n > 0 {
		a.counts[id] = n - 1
		a.seq.Add(1)
	}
}

// MarkTerminated returns the slot of instanceID, once however often its
// termination is reported.
func (a *Availability) MarkTerminated(id, instanceID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.terminated[instanceID] {
		return
	}
	if len(a.terminated) >= maxRemembered {
		// Repeats come within minutes of the first report; an old memory is
		// worth less than a bounded map.
		clear(a.terminated)
	}
	a.terminated[instanceID] = true
	if n, ok := a.counts[id]; ok {
		a.counts[id] = n + 1
		a.seq.Add(1)
	}
}

// Seq changes whenever a count does, so that lists built from the counts know
// to rebuild.
func (a *Availability) Seq() uint64 { return a.seq.Load() }
