package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Batcher turns a stream of triggers into batch windows. A trigger from a pod
// already seen in the current window does not extend it: pods are re-triggered
// every few seconds while pending, and would otherwise hold a window open forever.
type Batcher struct {
	clock     clock.Clock
	idle, max time.Duration

	mu     sync.Mutex
	seen   map[types.UID]struct{}
	signal chan struct{}
	last   Window
}

// Window describes a batch window once it closed: when the first trigger opened
// it, when it closed, how many distinct triggers it collected and why it
// closed ("idle" or "max"). The provisioner logs it, so that a run can be
// broken down phase by phase.
type Window struct {
	Opened, Closed time.Time
	Triggers       int
	Reason         string
}

// LastWindow is the window Wait closed last.
func (b *Batcher) LastWindow() Window {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// NewBatcher returns a batcher closing windows after idle without new triggers, or
// after max.
func NewBatcher(clk clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: clk, idle: idle, max: max, seen: map[types.UID]struct{}{}, signal: make(chan struct{}, 1)}
}

// Trigger records that the pod (or anything identified by uid) wants a decision.
func (b *Batcher) Trigger(uid types.UID) {
	b.mu.Lock()
	if _, ok := b.seen[uid]; ok {
		b.mu.Unlock()
		return
	}
	b.seen[uid] = struct{}{}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// Wait blocks until a trigger opens a window and the window closes. It returns
// false when ctx ends first.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-b.signal:
	case <-ctx.Done():
		return false
	}
	opened := b.clock.Now()
	maxTimer := b.clock.NewTimer(b.max)
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(b.idle)
	defer func() { idleTimer.Stop() }()
	for {
		select {
		case <-b.signal:
			idleTimer.Stop()
			idleTimer = b.clock.NewTimer(b.idle)
		case <-idleTimer.C():
			b.close(opened, "idle")
			return true
		case <-maxTimer.C():
			b.close(opened, "max")
			return true
		case <-ctx.Done():
			return false
		}
	}
}

func (b *Batcher) close(opened time.Time, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = Window{Opened: opened, Closed: b.clock.Now(), Triggers: len(b.seen), Reason: reason}
	b.seen = map[types.UID]struct{}{}
}
