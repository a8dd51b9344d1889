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
			b.close()
			return true
		case <-maxTimer.C():
			b.close()
			return true
		case <-ctx.Done():
			return false
		}
	}
}

func (b *Batcher) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = map[types.UID]struct{}{}
}
