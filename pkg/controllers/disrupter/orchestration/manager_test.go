package orchestration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// Registered with a manager, the queue cleans up after a lost queue on start,
// deletes a delete command's candidates without anyone calling Reconcile, and
// is woken by its replacement becoming Initialized (the fake clock never
// moves, so no timed requeue can be what acts).
func TestRegisteredQueueRunsOnItsOwn(t *testing.T) {
	f := setup(t)
	orphan := f.candidate(t, "mgr-orphan")
	leftover(t, f, orphan)
	empty := f.candidate(t, "mgr-empty")
	drifted := f.candidate(t, "mgr-drifted")

	mgr, err := manager.New(e.Config, manager.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueue(mgr.GetClient(), f.cluster, f.recorder, f.clk)
	if err := q.Register(mgr); err != nil {
		t.Fatal(err)
	}
	// A command started before the controller runs is picked up when it does.
	if err := q.StartCommand(f.ctx, &Command{Method: disruption.MethodEmptiness, Decision: DecisionDelete,
		Candidates: []*v1.NodeClaim{empty}, Explanation: "empty"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	Eventually(t, 30*time.Second, func() error {
		if tainted(t, f.ctx, orphan.Name) {
			return fmt.Errorf("orphaned taint still on %s", orphan.Name)
		}
		if !deleting(t, f.ctx, empty) {
			return fmt.Errorf("empty candidate not deleted")
		}
		return nil
	})

	r := replacement()
	if err := q.StartCommand(f.ctx, &Command{Method: disruption.MethodDrift, Decision: DecisionReplace,
		Candidates: []*v1.NodeClaim{drifted}, Replacements: []*v1.NodeClaim{r}, Explanation: "drifted"}); err != nil {
		t.Fatal(err)
	}
	// Waiting: the controller has seen the command and holds it.
	Eventually(t, 30*time.Second, func() error {
		if countEvents(f.events(), EventDisruptionWaitingReadiness, r.Name) == 0 {
			return fmt.Errorf("no %s event yet", EventDisruptionWaitingReadiness)
		}
		return nil
	})
	if deleting(t, f.ctx, drifted) {
		t.Fatal("candidate deleted before its replacement initialized")
	}
	f.initialize(t, r)
	Eventually(t, 30*time.Second, func() error {
		if !deleting(t, f.ctx, drifted) {
			return fmt.Errorf("candidate not deleted after its replacement initialized")
		}
		if q.Len() != 0 {
			return fmt.Errorf("%d commands left", q.Len())
		}
		return nil
	})
}
