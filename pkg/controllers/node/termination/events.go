package termination

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Event reasons on Nodes, as upstream Karpenter emits them.
const (
	ReasonFailedDraining                 = "FailedDraining"
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
)

// EventInterval is how often, at most, the same reason is reported on the
// same Node: termination passes run every second while a node drains, and
// users need the news, not a copy per pass.
const EventInterval = 2 * time.Minute

// nodeEvents records Node events at most once per EventInterval per node and
// reason.
type nodeEvents struct {
	recorder record.EventRecorder
	clock    clock.PassiveClock

	mu   sync.Mutex
	last map[eventKey]time.Time
}

type eventKey struct {
	node   types.UID
	reason string
}

func (e *nodeEvents) warn(node *corev1.Node, reason, message string) {
	if e.recorder == nil {
		return
	}
	key := eventKey{node: node.UID, reason: reason}
	now := e.clock.Now()
	e.mu.Lock()
	if t, ok := e.last[key]; ok && now.Sub(t) < EventInterval {
		e.mu.Unlock()
		return
	}
	e.last[key] = now
	e.mu.Unlock()
	e.recorder.Event(node, corev1.EventTypeWarning, reason, message)
}

// forget drops the node's history once it is gone.
func (e *nodeEvents) forget(node *corev1.Node) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.last {
		if k.node == node.UID {
			delete(e.last, k)
		}
	}
}
