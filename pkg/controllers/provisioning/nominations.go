package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/events"
)

// Upstream's limits on Nominated events: at most NominationEventsPerSecond
// across all pods with bursts of NominationEventBurst, and one per pod per
// events.EventDedupeWindow whatever NodeClaim or node it names.
const (
	NominationEventsPerSecond = 5
	NominationEventBurst      = 10
)

// nominations decides which Nominated events are recorded. A decision
// nominates every pod it places, up to 1,000 at once in a scale-up; one
// event each is as many event creates at the API server as the decision
// makes NodeClaim creates and more, at the moment those creates wait for it.
// The event is informational (kube-scheduler binds regardless), so upstream
// rate-limits it, and so does this.
type nominations struct {
	clock   clock.Clock
	limiter flowcontrol.RateLimiter
	mu      sync.Mutex
	last    map[types.UID]time.Time
}

func newNominations(clk clock.Clock) *nominations {
	return &nominations{
		clock:   clk,
		limiter: flowcontrol.NewTokenBucketRateLimiterWithClock(NominationEventsPerSecond, NominationEventBurst, clk),
		last:    map[types.UID]time.Time{},
	}
}

// allow reports whether pod's Nominated event is to be recorded now. As
// upstream, a pod deduped counts as nominated even when the rate limit then
// drops its event.
func (n *nominations) allow(pod *corev1.Pod) bool {
	now := n.clock.Now()
	n.mu.Lock()
	if t, ok := n.last[pod.UID]; ok && now.Sub(t) < events.EventDedupeWindow {
		n.mu.Unlock()
		return false
	}
	n.last[pod.UID] = now
	if len(n.last) > 50000 {
		for uid, t := range n.last {
			if now.Sub(t) >= events.EventDedupeWindow {
				delete(n.last, uid)
			}
		}
	}
	n.mu.Unlock()
	return n.limiter.TryAccept()
}
