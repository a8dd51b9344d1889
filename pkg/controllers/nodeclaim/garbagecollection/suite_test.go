package garbagecollection_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// process is one run of the controller binary: a provider with its in-memory
// pending launches, the lifecycle controller and the garbage collector. kill
// ends it the way a crash does: its goroutines stop and its memory is lost.
type process struct {
	ctx  context.Context
	kill context.CancelFunc
	cp   *kwok.CloudProvider
	lc   *lifecycle.Controller
	gc   *garbagecollection.Controller
}

func start(t *testing.T, clk *clocktesting.FakeClock) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	cp := kwok.New(ctx, e.Client, clk, catalog)
	return &process{
		ctx: ctx, kill: cancel, cp: cp,
		lc: lifecycle.NewController(e.Client, cp, clk, nil),
		gc: garbagecollection.NewController(e.Client, cp, clk, nil),
	}
}

func setup(t *testing.T, delay time.Duration) (context.Context, *clocktesting.FakeClock) {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &kwokv1alpha1.KWOKNodeClassList{})
	ExpectApplied(ctx, t, e.Client, fixtures.KWOKNodeClass("default", delay, true))
	return ctx, clocktesting.NewFakeClock(time.Now())
}

func nodeClaim(name string) *v1.NodeClaim {
	return fixtures.NodeClaim(name, fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}), fixtures.WithRequests("cpu", "1"))
}

func nodes(ctx context.Context, t *testing.T) []corev1.Node {
	t.Helper()
	list := &corev1.NodeList{}
	if err := e.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func claims(ctx context.Context, t *testing.T) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// awaitTimer waits until the provider armed its registration-delay timer, so
// that stepping the fake clock fires it.
func awaitTimer(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	Eventually(t, 10*time.Second, func() error {
		if clk.Waiters() < n {
			return fmt.Errorf("%d timers armed, want %d", clk.Waiters(), n)
		}
		return nil
	})
}
