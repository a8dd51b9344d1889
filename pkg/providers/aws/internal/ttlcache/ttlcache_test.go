package ttlcache

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := New[int](clk, time.Minute)
	c.Set("a", 1)
	c.SetWithTTL("b", 2, time.Hour)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %v %v", v, ok)
	}
	clk.Step(time.Minute)
	if _, ok := c.Get("a"); ok {
		t.Error("a must expire after its TTL")
	}
	if v, ok := c.Get("b"); !ok || v != 2 {
		t.Errorf("b = %v %v, want 2 (its own TTL is an hour)", v, ok)
	}
	c.Delete("b")
	if _, ok := c.Get("b"); ok {
		t.Error("b deleted")
	}
}

func TestSweepAndDeleteFunc(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := New[string](clk, time.Second)
	for i := 0; i < 255; i++ {
		c.Set(fmt.Sprint(i), "x")
	}
	clk.Step(2 * time.Second)
	c.Set("fresh", "y") // the 256th write sweeps
	if c.Len() != 1 {
		t.Errorf("Len = %d after the sweep, want 1", c.Len())
	}
	c.Set("other", "z")
	c.DeleteFunc(func(k, v string) bool { return v == "y" })
	if _, ok := c.Get("fresh"); ok {
		t.Error("DeleteFunc left fresh")
	}
	if _, ok := c.Get("other"); !ok {
		t.Error("DeleteFunc removed other")
	}
	c.Flush()
	if c.Len() != 0 {
		t.Error("Flush")
	}
}

func TestLoadFetchesOnlyWhenMissingAndKeepsNoError(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := New[int](clk, time.Minute)
	calls := 0
	fetch := func(v int, err error) func() (int, error) {
		return func() (int, error) { calls++; return v, err }
	}
	if _, err := c.Load("k", fetch(0, fmt.Errorf("throttled"))); err == nil || err.Error() != "throttled" {
		t.Fatalf("Load error = %v, want the fetch's error", err)
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("a failed fetch must not be cached")
	}
	if v, err := c.Load("k", fetch(7, nil)); err != nil || v != 7 {
		t.Fatalf("Load = %v %v, want 7", v, err)
	}
	if v, err := c.Load("k", fetch(8, nil)); err != nil || v != 7 || calls != 2 {
		t.Fatalf("Load = %v %v after %d fetches, want the cached 7 without a third fetch", v, err, calls)
	}
	clk.Step(time.Minute)
	if v, _ := c.Load("k", fetch(9, nil)); v != 9 || calls != 3 {
		t.Fatalf("Load after the TTL = %v (%d fetches), want a fresh 9", v, calls)
	}
}
