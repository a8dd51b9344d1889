package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// TestParseBatches reads Karpenter's log lines into batches: a window line
// opens a batch, the solve and create lines complete it, and lines from before
// the run are ignored.
func TestParseBatches(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"2026-01-01T00:00:00Z","level":"INFO","message":"batch window closed","opened":"2025-12-31T23:59:59Z","closed":"2026-01-01T00:00:00Z","triggers":1,"reason":"idle"}`,
		`{"time":"2026-01-01T00:01:10.5Z","level":"INFO","message":"batch window closed","opened":"2026-01-01T00:01:00Z","closed":"2026-01-01T00:01:10Z","triggers":700,"retries":400,"reason":"max"}`,
		`{"time":"2026-01-01T00:01:10.7Z","level":"INFO","message":"computed new nodeclaim(s) to fit pod(s)","pods":650,"awaiting-scheduler":600,"nodeclaims":90,"duration":"20ms","sync-wait":"50ms","prepare":"80ms"}`,
		`{"time":"2026-01-01T00:01:10.9Z","level":"INFO","message":"created nodeclaim","nodeclaim":"default-x","api-duration":"300ms"}`,
		`{"time":"2026-01-01T00:01:11.3Z","level":"INFO","message":"created nodeclaim","nodeclaim":"default-y","api-duration":"1.1s","api-start":"2026-01-01T00:01:10.1Z"}`,
		`{"time":"2026-01-01T00:01:11.4Z","level":"INFO","message":"created nodeclaim(s)","nodeclaims":90,"duration":"700ms"}`,
	}, "\n")
	since := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	bs, err := parseBatches(strings.NewReader(log), since)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 {
		t.Fatalf("got %d batches, want 1 (the one before since ignored): %+v", len(bs), bs)
	}
	b := bs[0]
	if b.reason != "max" || b.triggers != 700 || b.retries != 400 || b.pods != 650 || b.untried != 600 || b.claims != 90 || b.solve != 20*time.Millisecond || b.create != 700*time.Millisecond || b.apiWait != 1100*time.Millisecond ||
		b.syncWait != 50*time.Millisecond || b.prepare != 80*time.Millisecond || b.slowest != "default-y" || !b.slowestStart.Equal(since.Add(10100*time.Millisecond)) {
		t.Fatalf("batch parsed wrong: %+v", b)
	}
	p := &phases{batches: bs}
	if got := p.karpenterShare(); got != 1400*time.Millisecond {
		t.Fatalf("karpenter share %s, want 1.4s (window closed at :10, last NodeClaim created at :11.4)", got)
	}
	if got := p.karpenterOwnShare(); got != 300*time.Millisecond {
		t.Fatalf("karpenter's own share %s, want 0.3s (1.4s less the slowest create's 1.1s API call)", got)
	}
}
