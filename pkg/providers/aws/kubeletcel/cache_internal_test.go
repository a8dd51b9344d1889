package kubeletcel

import (
	"testing"
	"time"
)

// Compiled programs are reused by expression text; failures are not kept;
// a program unused for unusedTTL is dropped at the next sweep while one in
// use stays.
func TestCompileCache(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	first, err := e.program("vcpus * 2")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := e.program("vcpus * 2")
	if first != again {
		t.Error("the same expression was compiled twice")
	}
	if err := e.Validate("vcpus >"); err == nil || len(e.programs) != 1 {
		t.Errorf("a failed compilation was kept (%d programs, %v)", len(e.programs), err)
	}
	_ = e.Validate("max_pods + 1")
	now = now.Add(unusedTTL - time.Minute)
	_ = e.Validate("max_pods + 1") // in use
	now = now.Add(2 * time.Hour)
	_ = e.Validate("memory_mib")
	if _, ok := e.programs["vcpus * 2"]; ok {
		t.Error("a program unused for longer than the TTL was kept")
	}
	if _, ok := e.programs["max_pods + 1"]; !ok {
		t.Error("a program in use was dropped")
	}
}
