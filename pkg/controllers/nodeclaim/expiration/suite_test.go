package expiration_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/expiration"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

type fixture struct {
	ctx      context.Context
	clk      *clocktesting.FakeClock
	recorder *record.FakeRecorder
	ctrl     *expiration.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	clk := clocktesting.NewFakeClock(time.Now())
	rec := record.NewFakeRecorder(10)
	return &fixture{ctx: ctx, clk: clk, recorder: rec, ctrl: expiration.NewController(e.Client, clk, rec)}
}

// nodeClaim creates a launched NodeClaim of NodePool "default" with the
// termination finalizer (so a deleted one stays visible, deleting) and the
// given expireAfter ("" leaves the API default).
func nodeClaim(f *fixture, t *testing.T, name, expireAfter string) *v1.NodeClaim {
	t.Helper()
	opts := []fixtures.NodeClaimOption{
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}),
		fixtures.WithFinalizers(v1.TerminationFinalizer),
		// A terminationGracePeriod makes the disruption counter's
		// termination_mode "eventual".
		fixtures.WithTerminationGracePeriod(time.Hour),
	}
	if expireAfter != "" {
		opts = append(opts, fixtures.WithExpireAfter(expireAfter))
	}
	nc := fixtures.NodeClaim(name, opts...)
	ExpectApplied(f.ctx, t, e.Client, nc)
	t.Cleanup(func() { ExpectFinalizersRemoved(context.Background(), t, e.Client, nc) })
	return nc
}

func deleting(f *fixture, t *testing.T, nc *v1.NodeClaim) bool {
	t.Helper()
	return !ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()).DeletionTimestamp.IsZero()
}
