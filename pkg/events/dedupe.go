// Package events holds what the controllers share about Kubernetes events: a
// recorder that records an identical event at most once per window, for
// controllers that re-decide the same thing every few seconds (the
// provisioner's batches, the disruption passes).
package events

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventDedupeWindow: an identical event for the same object is recorded at most
// once per window (upstream's 2 minutes). Pending pods are re-solved every batch;
// without this each batch would write one event per pod to the API server.
const EventDedupeWindow = 2 * time.Minute

type dedupingRecorder struct {
	record.EventRecorder
	clock clock.Clock
	mu    sync.Mutex
	last  map[string]time.Time
}

// NewDedupingRecorder wraps r so that an identical event (same object, reason
// and message) is recorded at most once per EventDedupeWindow. nil stays nil.
func NewDedupingRecorder(r record.EventRecorder, clk clock.Clock) record.EventRecorder {
	if r == nil {
		return nil
	}
	return &dedupingRecorder{EventRecorder: r, clock: clk, last: map[string]time.Time{}}
}

func (d *dedupingRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	var uid types.UID
	if o, ok := obj.(client.Object); ok {
		uid = o.GetUID()
	}
	key := string(uid) + "\x00" + reason + "\x00" + msg
	now := d.clock.Now()
	d.mu.Lock()
	if t, ok := d.last[key]; ok && now.Sub(t) < EventDedupeWindow {
		d.mu.Unlock()
		return
	}
	d.last[key] = now
	if len(d.last) > 50000 {
		for k, t := range d.last {
			if now.Sub(t) >= EventDedupeWindow {
				delete(d.last, k)
			}
		}
	}
	d.mu.Unlock()
	d.EventRecorder.Event(obj, eventType, reason, msg)
}
