package expiration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/expiration"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestExpiresExactlyAtExpireAfter: one second before expiry nothing happens
// and the controller asks to come back in exactly that second; at expiry the
// NodeClaim is deleted, an event says why, and the disruption counter moves.
func TestExpiresExactlyAtExpireAfter(t *testing.T) {
	f := setup(t)
	nc := nodeClaim(f, t, "old", "1h")
	counter := metrics.NodeClaimsDisruptedTotal.WithLabelValues(expiration.MetricReason, "default", v1.CapacityTypeSpot, "", metrics.TerminationModeEventual)
	before := testutil.ToFloat64(counter)

	expiry := nc.CreationTimestamp.Add(time.Hour)
	f.clk.SetTime(expiry.Add(-time.Second))
	res := ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if deleting(f, t, nc) {
		t.Fatal("deleted a second before expireAfter")
	}
	if res.RequeueAfter != time.Second {
		t.Fatalf("RequeueAfter = %v, want exactly 1s (the time left)", res.RequeueAfter)
	}
	if got := testutil.ToFloat64(counter); got != before {
		t.Fatalf("counter moved before expiry: %v -> %v", before, got)
	}

	f.clk.SetTime(expiry)
	if res := ExpectReconciled(f.ctx, t, f.ctrl, nc); res.RequeueAfter != 0 {
		t.Errorf("unexpected requeue %v after deleting", res.RequeueAfter)
	}
	if !deleting(f, t, nc) {
		t.Fatal("not deleted at expireAfter")
	}
	if got := testutil.ToFloat64(counter); got != before+1 {
		t.Fatalf(`karpenter_nodeclaims_disrupted_total{reason="expired",nodepool="default",capacity_type="spot"} = %v, want %v`, got, before+1)
	}
	select {
	case ev := <-f.recorder.Events:
		if !strings.HasPrefix(ev, corev1.EventTypeNormal+" "+expiration.EventReason+" ") || !strings.Contains(ev, "expired after 1h") {
			t.Fatalf("event %q, want a Normal Disrupted event saying it expired after 1h", ev)
		}
	default:
		t.Fatal("no event recorded")
	}

	// Reconciling the deleting NodeClaim again counts nothing twice.
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if got := testutil.ToFloat64(counter); got != before+1 {
		t.Fatalf("counted twice: %v", got)
	}
}

// TestExpireAfterNever: never deleted, never requeued.
func TestExpireAfterNever(t *testing.T) {
	f := setup(t)
	nc := nodeClaim(f, t, "forever", "Never")
	f.clk.SetTime(nc.CreationTimestamp.Add(10 * 365 * 24 * time.Hour))
	if res := ExpectReconciled(f.ctx, t, f.ctrl, nc); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v for expireAfter Never", res.RequeueAfter)
	}
	if deleting(f, t, nc) {
		t.Fatal("expireAfter Never: deleted")
	}
}

// TestDefaultExpireAfter: a NodeClaim without expireAfter gets the API's
// default (720h) and expires then.
func TestDefaultExpireAfter(t *testing.T) {
	f := setup(t)
	nc := nodeClaim(f, t, "defaulted", "")
	if got := nc.Spec.ExpireAfter.String(); got != "720h" {
		t.Fatalf("defaulted expireAfter = %s, want 720h", got)
	}
	f.clk.SetTime(nc.CreationTimestamp.Time)
	if res := ExpectReconciled(f.ctx, t, f.ctrl, nc); res.RequeueAfter != 720*time.Hour {
		t.Fatalf("RequeueAfter = %v, want 720h", res.RequeueAfter)
	}
	f.clk.Step(720 * time.Hour)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if !deleting(f, t, nc) {
		t.Fatal("not deleted after the default 720h")
	}
}

// TestEventOnNode: the Node of an expiring NodeClaim gets the event too, so
// `kubectl describe node` says why it goes away.
func TestEventOnNode(t *testing.T) {
	f := setup(t)
	nc := nodeClaim(f, t, "with-node", "1m")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "with-node"}}
	ExpectApplied(f.ctx, t, e.Client, node)
	nc.Status.NodeName = node.Name
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	f.clk.SetTime(nc.CreationTimestamp.Add(2 * time.Minute))
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if n := len(f.recorder.Events); n != 2 {
		t.Fatalf("%d events, want 2 (NodeClaim and Node)", n)
	}
}

// TestAlreadyDeletingIsLeftAlone: a NodeClaim being deleted for another
// reason is not counted as expired.
func TestAlreadyDeletingIsLeftAlone(t *testing.T) {
	f := setup(t)
	nc := nodeClaim(f, t, "going", "1m")
	counter := metrics.NodeClaimsDisruptedTotal.WithLabelValues(expiration.MetricReason, "default", v1.CapacityTypeSpot, "", metrics.TerminationModeEventual)
	before := testutil.ToFloat64(counter)
	ExpectDeleted(f.ctx, t, e.Client, nc)
	f.clk.SetTime(nc.CreationTimestamp.Add(time.Hour))
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if got := testutil.ToFloat64(counter); got != before {
		t.Fatalf("deleting NodeClaim counted as expired: %v -> %v", before, got)
	}
	if n := len(f.recorder.Events); n != 0 {
		t.Fatalf("%d events for a NodeClaim already deleting", n)
	}
}
