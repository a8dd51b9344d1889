package nodepool_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

func setup(t *testing.T) (context.Context, *clocktesting.FakeClock) {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &v1.NodePoolList{}, &kwokv1alpha1.KWOKNodeClassList{})
	return ctx, clocktesting.NewFakeClock(time.Now())
}

func nodePool(name, nodeClassName string) *v1.NodePool {
	return fixtures.NodePool(name,
		fixtures.WithTemplateLabels(map[string]string{"team": "a"}),
		fixtures.WithTaints(
			corev1.Taint{Key: "b", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "a", Effect: corev1.TaintEffectNoExecute}),
		fixtures.WithNodeClass(nodeClassName))
}

func kwokNodeClass(name string, ready bool) *kwokv1alpha1.KWOKNodeClass {
	return fixtures.KWOKNodeClass(name, 0, ready)
}

func nodeClaim(name, pool string, capacity corev1.ResourceList) *v1.NodeClaim {
	return fixtures.NodeClaim(name, fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: pool}), fixtures.WithCapacity(capacity))
}
