package batcher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Concurrent requests with one key share one execution and get their own
// answers; other keys execute apart.
func TestBatchesByKey(t *testing.T) {
	var calls atomic.Int32
	b := New(Options{IdleTimeout: 200 * time.Millisecond}, func(s string) string { return s[:1] },
		func(_ context.Context, in []string) []Result[string] {
			calls.Add(1)
			out := make([]Result[string], len(in))
			for i, s := range in {
				out[i] = Result[string]{Output: fmt.Sprintf("%s/%d", s, len(in))}
			}
			return out
		})
	var wg sync.WaitGroup
	got := make([]string, 6)
	inputs := []string{"a1", "a2", "a3", "a4", "b1", "b2"}
	start := make(chan struct{})
	for i, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out, err := b.Add(context.Background(), in)
			if err != nil {
				t.Error(err)
			}
			got[i] = out
		}()
	}
	close(start)
	wg.Wait()
	for i, in := range inputs {
		want := in + "/4"
		if in[0] == 'b' {
			want = in + "/2"
		}
		if got[i] != want {
			t.Errorf("%s answered %q, want %q", in, got[i], want)
		}
	}
	if c := calls.Load(); c != 2 {
		t.Errorf("%d executions, want 2 (one per key)", c)
	}
}

// A full batch executes at once; the rest open a new one.
func TestMaxItems(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	b := New(Options{IdleTimeout: time.Hour, MaxTimeout: time.Hour, MaxItems: 2}, func(int) string { return "" },
		func(_ context.Context, in []int) []Result[int] {
			mu.Lock()
			sizes = append(sizes, len(in))
			mu.Unlock()
			return make([]Result[int], len(in))
		})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.Add(context.Background(), i); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(sizes) != 2 || sizes[0] != 2 || sizes[1] != 2 {
		t.Errorf("batch sizes %v, want [2 2]", sizes)
	}
}

// A caller that gives up gets its context's error; the batch still runs.
func TestCallerCancels(t *testing.T) {
	ran := make(chan struct{})
	b := New(Options{IdleTimeout: 10 * time.Millisecond}, func(int) string { return "" },
		func(ctx context.Context, in []int) []Result[int] {
			if ctx.Err() != nil {
				t.Error("batch context canceled with its first caller")
			}
			close(ran)
			return make([]Result[int], len(in))
		})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Add(ctx, 1); err != context.Canceled {
		t.Errorf("error %v, want context.Canceled", err)
	}
	<-ran
}

// Each batch observes its size and how long its window stayed open, under the
// batcher's name.
func TestBatchMetrics(t *testing.T) {
	b := New(Options{IdleTimeout: 20 * time.Millisecond, MaxItems: 3, Name: "test_batcher"}, func(string) string { return "" },
		func(_ context.Context, in []string) []Result[string] { return make([]Result[string], len(in)) })
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = b.Add(context.Background(), "x") }()
	}
	wg.Wait()
	size := histogramOf(t, batchSize, "test_batcher")
	if size.GetSampleCount() != 1 || size.GetSampleSum() != 3 {
		t.Errorf("batch_size: %d samples summing to %v, want one of 3", size.GetSampleCount(), size.GetSampleSum())
	}
	if window := histogramOf(t, batchTime, "test_batcher"); window.GetSampleCount() != 1 {
		t.Errorf("batch_time_seconds: %d samples, want 1", window.GetSampleCount())
	}
}

func histogramOf(t *testing.T, h *prometheus.HistogramVec, name string) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues(name).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
