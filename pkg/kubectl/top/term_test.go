package top

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// screen is a goroutine-safe stand-in for the terminal: it records the bytes written.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screen) Reset() { s.mu.Lock(); s.buf.Reset(); s.mu.Unlock() }

func testLoop(m *Model, minInterval time.Duration) (*loop, *screen) {
	scr := &screen{}
	return &loop{
		m: m, dirty: make(chan struct{}, 1), out: scr, minInterval: minInterval,
		size: func() (int, int, error) { return 160, 50, nil },
	}, scr
}

func (l *loop) notify() {
	select {
	case l.dirty <- struct{}{}:
	default:
	}
}

// A burst of events within minInterval of the last frame draws nothing until
// the coalesced redraw is due: 1,000 node events, one frame (the first).
func TestLiveLoopCoalescesABurstOfEvents(t *testing.T) {
	m := NewModel(labelPrice)
	l, _ := testLoop(m, time.Hour)
	keys := make(chan byte, 1)
	done := make(chan int)
	go func() { done <- l.serve(context.Background(), keys, nil, nil) }()
	for i := 0; i < 1000; i++ {
		m.UpsertNode(testNode(fmt.Sprintf("node-%04d", i), "default", now))
		l.notify()
	}
	keys <- 'q'
	if code := <-done; code != 0 {
		t.Fatalf("q returned %d, want 0", code)
	}
	if l.stats.Frames != 1 {
		t.Fatalf("%d frames for a burst of 1,000 events within minInterval, want 1 (the first)", l.stats.Frames)
	}
}

// After a burst, the last state is drawn (once minInterval passed), in fewer
// frames than events.
func TestLiveLoopDrawsTheLastStateOfABurst(t *testing.T) {
	m := NewModel(labelPrice)
	const interval = 20 * time.Millisecond
	l, scr := testLoop(m, interval)
	keys := make(chan byte, 1)
	done := make(chan int)
	start := time.Now()
	go func() { done <- l.serve(context.Background(), keys, nil, nil) }()
	for i := 0; i < 300; i++ {
		m.UpsertNode(testNode(fmt.Sprintf("node-%04d", i), "default", now))
		l.notify()
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(scr.String(), "300 nodes in"), nil
	}); err != nil {
		t.Fatalf("the last state never drawn:\n%s", scr.String())
	}
	keys <- 3 // Ctrl-C
	if code := <-done; code != 0 {
		t.Fatalf("Ctrl-C returned %d, want 0", code)
	}
	if bound := 2 + int(time.Since(start)/interval); l.stats.Frames > bound || l.stats.Frames >= 300 {
		t.Fatalf("%d frames for 300 events in %s with a %s minimum interval (at most %d)", l.stats.Frames, time.Since(start), interval, bound)
	}
	t.Logf("%d frames for 300 events", l.stats.Frames)
}

func TestLiveLoopEndsWithItsContext(t *testing.T) {
	l, _ := testLoop(NewModel(nil), 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- l.serve(ctx, nil, nil, nil) }()
	cancel()
	if code := <-done; code != 130 {
		t.Fatalf("a cancelled context returned %d, want 130", code)
	}
}

// A redraw writes only the lines that changed.
func TestDrawWritesOnlyChangedLines(t *testing.T) {
	m := NewModel(labelPrice)
	for i := 0; i < 20; i++ {
		m.UpsertNode(testNode(fmt.Sprintf("node-%03d", i), "default", now))
		m.UpsertPod(testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("node-%03d", i), "1", "1Gi"))
	}
	l, scr := testLoop(m, 0)
	l.draw()
	if first := scr.String(); !strings.Contains(first, "node-000") || !strings.Contains(first, "node-019") {
		t.Fatalf("first frame lacks nodes:\n%s", first)
	}
	scr.Reset()
	// Columns keep their widths (1/4 -> 2/4, 20/80 -> 21/80): only three lines change.
	m.UpsertPod(testPod("p7", "node-007", "2", "1Gi"))
	l.draw()
	got := scr.String()
	if !strings.Contains(got, "node-007") {
		t.Fatalf("the changed node's line was not rewritten: %q", got)
	}
	for _, other := range []string{"node-000", "node-006", "node-008", "node-019"} {
		if strings.Contains(got, other) {
			t.Fatalf("unchanged line %s rewritten: %q", other, got)
		}
	}
	// The node's line, the pool's and the total (and the title if the clock ticked).
	if n := strings.Count(got, clearEOL); n < 3 || n > 4 {
		t.Fatalf("%d lines rewritten, want 3 or 4: %q", n, got)
	}
	// The widest value going away (2.5Gi/16Gi -> 1Gi/16Gi) leaves its
	// column as wide as it was: the other lines stay.
	m.UpsertPod(testPod("big", "node-010", "100m", "1536Mi"))
	l.draw()
	scr.Reset()
	m.DeletePod("default/big")
	l.draw()
	if got := scr.String(); !strings.Contains(got, "node-010") || strings.Contains(got, "node-011") {
		t.Fatalf("a narrower value rewrote other lines: %q", got)
	}
	scr.Reset()
	m.DeleteNode("node-019")
	m.DeleteNode("node-018")
	l.draw()
	if got := scr.String(); !strings.Contains(got, clearEOS) {
		t.Fatalf("a shorter frame must clear what is below it: %q", got)
	}
}
