package orchestration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

type fixture struct {
	ctx      context.Context
	clk      *clocktesting.FakeClock
	cluster  *state.Cluster
	recorder *record.FakeRecorder
	queue    *orchestration.Queue
}

// setup empties the cluster and returns a queue over a fresh cluster state on
// a fake clock. Tests drive the queue with Reconcile, as its controller would.
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	t.Cleanup(func() {
		ExpectCleanedUp(context.Background(), t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	})
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, e.Client)
	rec := record.NewFakeRecorder(1000)
	return &fixture{ctx: ctx, clk: clk, cluster: cluster, recorder: rec, queue: orchestration.NewQueue(e.Client, cluster, rec, clk)}
}

// candidate creates an initialized NodeClaim and its Node (carrying an
// unrelated taint that must survive), both known to cluster state.
func (f *fixture) candidate(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nc := claim(name, fixtures.WithLabels(map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}))
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc.Status.NodeName = name
	nc.Status.ProviderID = "kwok://" + name
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	node := fixtures.Node(name, fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}), fixtures.WithProviderID("kwok://"+name),
		fixtures.WithTaints(corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}))
	ExpectApplied(f.ctx, t, e.Client, node)
	f.cluster.UpdateNodeClaim(nc)
	f.cluster.UpdateNode(node)
	return nc
}

// replacement is a NodeClaim as the disruption controller hands it over: complete, not created.
func replacement() *v1.NodeClaim { return claim("", fixtures.WithGenerateName("default-")) }

// claim is a NodeClaim of NodePool "default" with the termination finalizer,
// for 1 cpu of a c-4x-amd64-linux.
func claim(name string, opts ...fixtures.NodeClaimOption) *v1.NodeClaim {
	base := []fixtures.NodeClaimOption{
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}),
		fixtures.WithFinalizers(v1.TerminationFinalizer),
		fixtures.WithRequirements(fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c-4x-amd64-linux")),
		fixtures.WithRequests("cpu", "1"),
	}
	return fixtures.NodeClaim(name, append(base, opts...)...)
}

// initialize plays the lifecycle controller: the replacement's Initialized condition becomes True.
func (f *fixture) initialize(t *testing.T, nc *v1.NodeClaim) {
	t.Helper()
	nc = ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
}

func (f *fixture) reconcile(t *testing.T, id string) time.Duration {
	t.Helper()
	res, err := f.queue.Reconcile(f.ctx, id)
	if err != nil {
		t.Fatalf("reconciling command %s: %v", id, err)
	}
	return res.RequeueAfter
}

// events drains the recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case ev := <-f.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func countEvents(events []string, substrs ...string) int {
	n := 0
outer:
	for _, ev := range events {
		for _, s := range substrs {
			if !strings.Contains(ev, s) {
				continue outer
			}
		}
		n++
	}
	return n
}

func tainted(t *testing.T, ctx context.Context, name string) bool {
	t.Helper()
	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	found := false
	other := false
	for _, tn := range node.Spec.Taints {
		if v1.IsDisruptingTaint(tn) {
			found = true
		}
		if tn.Key == "dedicated" {
			other = true
		}
	}
	if !other {
		t.Fatalf("node %s lost its unrelated taint: %v", name, node.Spec.Taints)
	}
	return found
}

func reasonCondition(t *testing.T, ctx context.Context, name string) *v1.NodeClaim {
	t.Helper()
	return ExpectExists(ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func markedInState(cluster *state.Cluster, name string) bool {
	for _, sn := range cluster.Nodes() {
		if sn.NodeClaim != nil && sn.NodeClaim.Name == name {
			return sn.MarkedForDeletion()
		}
	}
	return false
}

func deleting(t *testing.T, ctx context.Context, nc *v1.NodeClaim) bool {
	t.Helper()
	cur := &v1.NodeClaim{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return true
		}
		t.Fatal(err)
	}
	return cur.DeletionTimestamp != nil
}
