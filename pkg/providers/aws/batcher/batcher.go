package batcher

import (
	"context"
	"sync"
	"time"
)

// Options are a batcher's windows.
type Options struct {
	// IdleTimeout closes a batch no request joined for this long.
	IdleTimeout time.Duration
	// MaxTimeout closes a batch this long after it opened.
	MaxTimeout time.Duration
	// MaxItems closes a batch at this many requests (0 = unlimited).
	MaxItems int
	// Name labels the batcher's metrics (upstream's names: create_fleet,
	// describe_instances, terminate_instances).
	Name string
}

// Default windows, upstream's.
const (
	DefaultIdleTimeout = 35 * time.Millisecond
	DefaultMaxTimeout  = time.Second
)

func (o Options) withDefaults() Options {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	return o
}

// Result is one request's answer.
type Result[O any] struct {
	Output O
	Err    error
}

// Executor runs one batch and returns one Result per input, in order.
type Executor[I, O any] func(ctx context.Context, inputs []I) []Result[O]

// Batcher groups requests with equal keys. The windows are wall-clock time:
// they bound request latency, they are not a cache lifetime.
type Batcher[I, O any] struct {
	opts Options
	key  func(I) string
	exec Executor[I, O]

	mu      sync.Mutex
	buckets map[string]*bucket[I, O]
}

type request[I, O any] struct {
	input I
	out   chan Result[O]
}

type bucket[I, O any] struct {
	ctx      context.Context
	opened   time.Time
	requests []request[I, O]
	joined   chan struct{}
	full     chan struct{}
}

// New returns a batcher; key says which inputs may share a batch.
func New[I, O any](opts Options, key func(I) string, exec Executor[I, O]) *Batcher[I, O] {
	return &Batcher[I, O]{opts: opts.withDefaults(), key: key, exec: exec, buckets: map[string]*bucket[I, O]{}}
}

// Add submits input and waits for its batch's answer or ctx's end. The batch
// runs under the context of its first request, without its cancellation, so
// one caller giving up does not fail the others.
func (b *Batcher[I, O]) Add(ctx context.Context, input I) (O, error) {
	out := make(chan Result[O], 1)
	k := b.key(input)
	b.mu.Lock()
	bk, ok := b.buckets[k]
	if !ok {
		bk = &bucket[I, O]{ctx: context.WithoutCancel(ctx), opened: time.Now(), joined: make(chan struct{}, 1), full: make(chan struct{})}
		b.buckets[k] = bk
		go b.run(k, bk)
	}
	bk.requests = append(bk.requests, request[I, O]{input: input, out: out})
	if b.opts.MaxItems > 0 && len(bk.requests) >= b.opts.MaxItems {
		// Full: later requests open a new batch.
		delete(b.buckets, k)
		close(bk.full)
	} else {
		select {
		case bk.joined <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	select {
	case r := <-out:
		return r.Output, r.Err
	case <-ctx.Done():
		var zero O
		return zero, ctx.Err()
	}
}

func (b *Batcher[I, O]) run(k string, bk *bucket[I, O]) {
	idle := time.NewTimer(b.opts.IdleTimeout)
	maxT := time.NewTimer(b.opts.MaxTimeout)
	defer idle.Stop()
	defer maxT.Stop()
wait:
	for {
		select {
		case <-bk.joined:
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(b.opts.IdleTimeout)
		case <-idle.C:
			break wait
		case <-maxT.C:
			break wait
		case <-bk.full:
			break wait
		}
	}
	b.mu.Lock()
	if b.buckets[k] == bk {
		delete(b.buckets, k)
	}
	reqs := bk.requests
	b.mu.Unlock()
	batchTime.WithLabelValues(b.opts.Name).Observe(time.Since(bk.opened).Seconds())
	batchSize.WithLabelValues(b.opts.Name).Observe(float64(len(reqs)))

	inputs := make([]I, len(reqs))
	for i, r := range reqs {
		inputs[i] = r.input
	}
	results := b.exec(bk.ctx, inputs)
	for i, r := range reqs {
		r.out <- results[i]
	}
}
