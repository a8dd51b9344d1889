package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// TestParseAuditSplitsACreate reads the API server's audit events of
// NodeClaim creates by the created name (from the response, as generateName
// creates have none in the request), skips other writes, and splits what the
// caller waited into before, at and after the API server.
func TestParseAuditSplitsACreate(t *testing.T) {
	log := strings.Join([]string{
		`{"kind":"Event","stage":"ResponseComplete","verb":"create","objectRef":{"resource":"nodeclaims"},"responseObject":{"metadata":{"name":"default-abc"}},"requestReceivedTimestamp":"2026-01-01T00:00:00.400000Z","stageTimestamp":"2026-01-01T00:00:01.000000Z","annotations":{"apiserver.latency.k8s.io/etcd":"450ms","apiserver.latency.k8s.io/total":"600ms","apiserver.latency.k8s.io/authentication":"2ms","apiserver.latency.k8s.io/response-write":"900ns"}}`,
		`{"kind":"Event","stage":"ResponseComplete","verb":"patch","objectRef":{"resource":"nodeclaims","name":"default-abc"},"requestReceivedTimestamp":"2026-01-01T00:00:02Z","stageTimestamp":"2026-01-01T00:00:03Z"}`,
	}, "\n")
	got, err := parseAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("want the one create, got %+v", got)
	}
	st, ok := got["default-abc"]
	if !ok {
		t.Fatalf("create not keyed by its response's name: %+v", got)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to, in, back := createSplit(start, start.Add(1100*time.Millisecond), st)
	if to != 400*time.Millisecond || in != 600*time.Millisecond || back != 100*time.Millisecond {
		t.Fatalf("split %s + %s + %s, want 400ms + 600ms + 100ms", to, in, back)
	}
	if s := latencySteps(st.latency); s != "etcd 450ms, authentication 2ms" {
		t.Fatalf("steps %q: want the steps of at least 1 ms, largest first, without the total", s)
	}
}

// TestParseClaimWritesByKind counts NodeClaim writes by kind from an audit
// log: applies by their field manager, merge patches of the status, metadata
// patches, per NodeClaim created; other resources are left out.
func TestParseClaimWritesByKind(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"nodeclaims"}}`,
		`{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"nodeclaims"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/karpenter.sh/v1/nodeclaims/a","objectRef":{"resource":"nodeclaims","name":"a"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/karpenter.sh/v1/nodeclaims/a/status?fieldManager=karpenter-nodeclaim-lifecycle&force=true","objectRef":{"resource":"nodeclaims","name":"a","subresource":"status"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/karpenter.sh/v1/nodeclaims/b/status?fieldManager=karpenter-nodeclaim-lifecycle&force=true","objectRef":{"resource":"nodeclaims","name":"b","subresource":"status"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/karpenter.sh/v1/nodeclaims/b/status","objectRef":{"resource":"nodeclaims","name":"b","subresource":"status"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/apis/karpenter.sh/v1/nodeclaims/b/status?fieldManager=karpenter-podevents","objectRef":{"resource":"nodeclaims","name":"b","subresource":"status"}}`,
		`{"stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/nodes/b","objectRef":{"resource":"nodes","name":"b"}}`,
	}, "\n")
	got, err := parseClaimWrites(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if got.claims != 2 || got.statusPerClaim() != 2 {
		t.Fatalf("%d claims, %.2f status writes each: want 2 and 2 (%v)", got.claims, got.statusPerClaim(), got.byKind)
	}
	want := "2 NodeClaims, 2.00 status writes each; create 2 (1.00); metadata patch 1 (0.50); status apply karpenter-nodeclaim-lifecycle 2 (1.00); status merge patch 1 (0.50); status merge patch karpenter-podevents 1 (0.50)"
	if s := got.String(); s != want {
		t.Fatalf("got  %s\nwant %s", s, want)
	}
	// A later phase's writes: the same log read again, less the first read.
	before, err := parseClaimWrites(strings.NewReader(strings.SplitN(log, "\n", 4)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if s, want := got.since(before).String(), "1 NodeClaims, 4.00 status writes each; create 1 (1.00); metadata patch 1 (1.00); status apply karpenter-nodeclaim-lifecycle 2 (2.00); status merge patch 1 (1.00); status merge patch karpenter-podevents 1 (1.00)"; s != want {
		t.Fatalf("since: got  %s\nwant %s", s, want)
	}
}
