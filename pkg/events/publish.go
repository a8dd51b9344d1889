package events

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Event is one Kubernetes event with upstream's deduplication: events of the
// same reason and DedupeValues are recorded at most once per DedupeTimeout
// (EventDedupeWindow when zero). Without DedupeValues it is always recorded.
type Event struct {
	InvolvedObject runtime.Object
	Type           string
	Reason         string
	Message        string
	DedupeValues   []string
	DedupeTimeout  time.Duration
}

func (e Event) key() string {
	return strings.ToLower(e.Reason) + "\x00" + strings.Join(e.DedupeValues, "\x00")
}

// Publisher records Events, deduplicating as each asks.
type Publisher interface {
	Publish(...Event)
}

type publisher struct {
	rec   record.EventRecorder
	clock clock.Clock
	mu    sync.Mutex
	until map[string]time.Time
}

// NewPublisher wraps r. A nil r gives a Publisher that records nothing.
func NewPublisher(r record.EventRecorder, clk clock.Clock) Publisher {
	return &publisher{rec: r, clock: clk, until: map[string]time.Time{}}
}

func (p *publisher) Publish(evts ...Event) {
	if p == nil || p.rec == nil {
		return
	}
	for _, e := range evts {
		if len(e.DedupeValues) > 0 && !p.first(e) {
			continue
		}
		p.rec.Event(e.InvolvedObject, e.Type, e.Reason, e.Message)
	}
}

// first reports whether e's key is not within its dedupe timeout, and starts
// one if so.
func (p *publisher) first(e Event) bool {
	timeout := e.DedupeTimeout
	if timeout == 0 {
		timeout = EventDedupeWindow
	}
	k, now := e.key(), p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if until, ok := p.until[k]; ok && now.Before(until) {
		return false
	}
	p.until[k] = now.Add(timeout)
	if len(p.until) > 50000 {
		for key, until := range p.until {
			if !now.Before(until) {
				delete(p.until, key)
			}
		}
	}
	return true
}
