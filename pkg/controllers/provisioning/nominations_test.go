package provisioning_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestNominatedEventsAreRateLimited: a decision that places 30 pods records
// upstream's burst of Nominated events (10), not one per pod; the pods it did
// not announce are not announced by the next decision either (one per pod per
// dedupe window), and the limiter refills at 5 a second.
func TestNominatedEventsAreRateLimited(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np)
	for i := range 30 {
		ExpectApplied(f.ctx, t, testEnv.Client, pendingPod(fmt.Sprintf("p-%02d", i), "100m"))
	}
	res := f.schedule(t)
	placed := 0
	for _, nc := range res.Solve.NewClaims {
		placed += len(nc.Pods)
	}
	if placed != 30 || len(res.NodeClaims) == 0 {
		t.Fatalf("placed %d pods on %d NodeClaims, want 30", placed, len(res.NodeClaims))
	}
	if n := nominated(f.events()); n != provisioning.NominationEventBurst {
		t.Fatalf("%d Nominated events for 30 pods, want the burst of %d", n, provisioning.NominationEventBurst)
	}

	f.clock.Step(time.Second)
	f.schedule(t)
	if n := nominated(f.events()); n != 0 {
		t.Fatalf("%d Nominated events for pods nominated a second ago, want 0", n)
	}

	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("late-1", "100m"), pendingPod("late-2", "100m"))
	f.schedule(t)
	if n := nominated(f.events()); n != 2 {
		t.Fatalf("%d Nominated events for 2 new pods a second later (5 tokens), want 2", n)
	}
}

func nominated(events []string) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, provisioning.EventNominated) {
			n++
		}
	}
	return n
}
