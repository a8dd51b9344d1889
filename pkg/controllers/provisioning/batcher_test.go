package provisioning

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitAsync runs Wait in a goroutine and reports on the returned channel.
func waitAsync(ctx context.Context, b *Batcher) <-chan bool {
	out := make(chan bool, 1)
	go func() { out <- b.Wait(ctx) }()
	return out
}

// waitForTimers blocks until Wait has armed n timers on the fake clock, so that
// stepping the clock afterwards is observed.
func waitForTimers(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("batcher never armed its timers")
		}
		time.Sleep(time.Millisecond)
	}
}

func closed(ch <-chan bool) bool {
	select {
	case <-ch:
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

func TestBatchClosesAfterIdle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(context.Background(), b)
	b.Trigger("a")
	waitForTimers(t, clk)
	clk.Step(999 * time.Millisecond)
	if closed(done) {
		t.Fatal("window closed before the idle duration")
	}
	clk.Step(time.Millisecond)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait reported a cancelled context")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("window did not close after the idle duration")
	}
}

func TestNewPodsExtendTheWindowUpToMax(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(context.Background(), b)
	b.Trigger("p0")
	waitForTimers(t, clk)
	for i := 1; i < 10; i++ {
		clk.Step(900 * time.Millisecond)
		b.Trigger(types.UID("p" + string(rune('0'+i))))
		// Let Wait re-arm the idle timer before the next step.
		deadline := time.Now().Add(5 * time.Second)
		for len(b.signal) > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if closed(done) {
			t.Fatalf("window closed after %d triggers within the idle duration", i)
		}
	}
	// 8.1s elapsed; the max duration closes it although pods keep coming.
	clk.Step(1900 * time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("window did not close at the max duration")
	}
}

func TestRepeatedTriggerOfOnePodDoesNotExtend(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(context.Background(), b)
	b.Trigger("same")
	waitForTimers(t, clk)
	clk.Step(900 * time.Millisecond)
	b.Trigger("same")
	clk.Step(100 * time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a re-trigger of the same pod extended the window")
	}
	// After the window, the same pod opens a new one.
	done = waitAsync(context.Background(), b)
	b.Trigger("same")
	waitForTimers(t, clk)
	clk.Step(time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the pod could not open a second window")
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	b := NewBatcher(clocktesting.NewFakeClock(time.Now()), time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(ctx, b)
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Wait reported a batch although nothing triggered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait ignored the cancelled context")
	}
}

// A pod the last decision saw comes back as a retry. A window of retries only
// closes after the idle duration from its opening; once a new pod is in the
// window, retries extend it like new pods (upstream's semantics).
func TestRetriesExtendOnlyWindowsWithNewPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := NewBatcher(clk, time.Second, 10*time.Second)
	b.Decided([]types.UID{"waiting-1", "waiting-2"})

	done := waitAsync(context.Background(), b)
	b.Trigger("waiting-1")
	waitForTimers(t, clk)
	clk.Step(900 * time.Millisecond)
	b.Trigger("waiting-2")
	deadline := time.Now().Add(5 * time.Second)
	for len(b.retry) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	clk.Step(100 * time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a retry extended a window of retries past the idle duration")
	}
	if w := b.LastWindow(); w.Triggers != 2 || w.Retries != 2 || w.Reason != "idle" {
		t.Fatalf("window %+v, want 2 triggers, both retries, closed idle", w)
	}

	// A new pod, then a retry: the retry extends the window.
	done = waitAsync(context.Background(), b)
	b.Trigger("new")
	waitForTimers(t, clk)
	clk.Step(900 * time.Millisecond)
	b.Trigger("waiting-1")
	deadline = time.Now().Add(5 * time.Second)
	for len(b.retry) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	clk.Step(100 * time.Millisecond)
	if closed(done) {
		t.Fatal("the window closed although a retry arrived within the idle duration of a window with a new pod")
	}
	// 2s after the window opened, 1.1s after the retry: closed whether Wait
	// re-armed its idle timer before or after the previous step.
	clk.Step(time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("window did not close after the idle duration")
	}
	if w := b.LastWindow(); w.Triggers != 2 || w.Retries != 1 {
		t.Fatalf("window %+v, want 2 triggers of which 1 retry", w)
	}
}
