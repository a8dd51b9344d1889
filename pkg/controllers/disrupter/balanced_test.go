package disrupter_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func balancedPool(t *testing.T, f *fixture) {
	t.Helper()
	np := &v1.NodePool{}
	if err := testEnv.Client.Get(f.ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	ExpectApplied(f.ctx, t, testEnv.Client, np)
}

// A Balanced NodePool's move that scores at least 1/k is started, with a
// ConsolidationApproved event giving its score on the node and its NodeClaim,
// and counted in consolidation_moves_total and consolidation_score.
func TestBalancedConsolidationApprovedWithItsScore(t *testing.T) {
	f := newFixture(t)
	balancedPool(t, f)
	node, nc := f.node(t, "big", "c-16x-amd64-linux")
	f.pod(t, "web", "big", "1", nil)
	moves := disrupter.ConsolidationMovesTotal.WithLabelValues(disrupter.MoveApproved, "default", string(v1.ConsolidationPolicyBalanced))
	movesBefore := testutil.ToFloat64(moves)
	scoresBefore := testutil.CollectAndCount(disrupter.ConsolidationScore)

	if r := f.pass(t); !r.acted || r.err != nil {
		t.Fatalf("want the Balanced replacement started, got %+v", r)
	}
	events := f.events()
	for _, obj := range []string{node.Name, nc.Name} {
		found := false
		for _, e := range events {
			if strings.HasPrefix(e, "Normal ConsolidationApproved score ") && strings.Contains(e, ">= threshold 0.50 (k: 2, savings ") {
				found = true
			}
		}
		if !found {
			t.Fatalf("no ConsolidationApproved event with the score for %s in %q", obj, events)
		}
	}
	if got := testutil.ToFloat64(moves); got != movesBefore+1 {
		t.Errorf("consolidation_moves_total{approved,default,Balanced} %v -> %v, want +1", movesBefore, got)
	}
	if got := testutil.CollectAndCount(disrupter.ConsolidationScore); got < max(scoresBefore, 1) {
		t.Errorf("consolidation_score has %d series, want the approved move observed", got)
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonUnderutilized) {
		t.Fatalf("DisruptionReason %+v", c)
	}
}
