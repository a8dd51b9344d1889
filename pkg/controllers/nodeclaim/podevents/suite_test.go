package podevents_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

type fixture struct {
	ctx  context.Context
	clk  *clocktesting.FakeClock
	ctrl *podevents.Controller
}

// setup empties the cluster and returns the controller on a fake clock that
// starts on a whole second (the API stores times in seconds).
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &corev1.PodList{}, &v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{})
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	return &fixture{ctx: ctx, clk: clk, ctrl: podevents.NewController(e.Client, clk)}
}

// launched creates a NodeClaim and its Node (linked by provider ID, and by an
// owner reference when owned) as the lifecycle controller leaves them.
func launched(f *fixture, t *testing.T, name string, owned bool) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	nc := fixtures.NodeClaim(name, fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}))
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc.Status.ProviderID = "kwok://" + name
	nc.Status.NodeName = name
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	opts := []fixtures.NodeOption{fixtures.WithProviderID("kwok://" + name)}
	if owned {
		opts = append(opts, fixtures.WithOwners(metav1.OwnerReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID}))
	}
	node := fixtures.Node(name, opts...)
	ExpectApplied(f.ctx, t, e.Client, node)
	return ExpectExists(f.ctx, t, e.Client, nc), node
}

// pod is a pod on nodeName ("" for pending) requesting 100m, deleted at once.
func pod(name, nodeName string) *corev1.Pod {
	return fixtures.Pod(name, fixtures.OnNode(nodeName), fixtures.WithTerminationGracePeriodSeconds(0), fixtures.WithRequests("cpu", "100m"))
}

// bind plays the kube-scheduler: it binds the pod through the binding
// subresource, as a real scheduler does.
func bind(f *fixture, t *testing.T, p *corev1.Pod, nodeName string) {
	t.Helper()
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := e.Client.SubResource("binding").Create(f.ctx, p, b); err != nil {
		t.Fatalf("binding pod %s to %s: %v", p.Name, nodeName, err)
	}
}

func lastPodEvent(f *fixture, t *testing.T, nc *v1.NodeClaim) time.Time {
	t.Helper()
	return ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()).Status.LastPodEventTime.Time
}

// nodePool is the NodePool "default" the fixtures' NodeClaims belong to, with
// the given consolidateAfter.
func nodePool(consolidateAfter string) *v1.NodePool {
	return fixtures.NodePool("default", fixtures.WithConsolidateAfter(consolidateAfter))
}
