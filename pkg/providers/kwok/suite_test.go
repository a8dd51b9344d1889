package kwok_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// setup empties the cluster and returns a provider on a fake clock with the
// embedded catalog.
func setup(t *testing.T) (context.Context, *kwok.CloudProvider, *clocktesting.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &corev1.NodeList{}, &v1.NodeClaimList{}, &kwokv1alpha1.KWOKNodeClassList{})
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	return ctx, kwok.New(ctx, e.Client, clk, catalog), clk
}

var nodeClass = fixtures.KWOKNodeClass

// nodeClaim is a NodeClaim of NodePool "default" and the KWOKNodeClass
// nodeClassName for 1 cpu, labelled, annotated, tainted and startup-tainted,
// requiring reqs (when none, any OS: the API requires one requirement).
func nodeClaim(name, nodeClassName string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	if len(reqs) == 0 {
		reqs = append(reqs, req(corev1.LabelOSStable, corev1.NodeSelectorOpExists))
	}
	return fixtures.NodeClaim(name,
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", "team": "a"}),
		fixtures.WithAnnotations(map[string]string{"example.com/owner": "me"}),
		fixtures.WithRequirements(reqs...),
		fixtures.WithTaints(corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithStartupTaints(corev1.Taint{Key: "example.com/booting", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithRequests("cpu", "1"),
		fixtures.WithNodeClass(nodeClassName))
}

var req = fixtures.Requirement

func clientKey(name string) types.NamespacedName { return types.NamespacedName{Name: name} }
