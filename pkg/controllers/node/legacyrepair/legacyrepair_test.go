package legacyrepair_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/legacyrepair"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// provider answers only its repair policies: Ready=False for 30 minutes
// (replace), and a reboot policy the legacy controller leaves alone.
type provider struct{ cloudprovider.CloudProvider }

func (provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: time.Minute, Action: cloudprovider.RebootNode},
	}
}

type fixture struct {
	ctx  context.Context
	clk  *clocktesting.FakeClock
	rec  *record.FakeRecorder
	ctrl *legacyrepair.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	rec := record.NewFakeRecorder(100)
	ctrl, err := legacyrepair.NewController(e.Client, provider{}, clk, rec)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ctx: ctx, clk: clk, rec: rec, ctrl: ctrl}
}

// node creates a node of NodePool pool and its NodeClaim, Ready for an hour;
// with since > 0 its condition cond is False since that long ago.
func (f *fixture) node(t *testing.T, name, pool string, cond corev1.NodeConditionType, since time.Duration) {
	t.Helper()
	id := "kwok://" + name
	labels := fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: pool})
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clk.Now().Add(-time.Hour))}
	conds := []corev1.NodeCondition{ready}
	if since > 0 {
		bad := corev1.NodeCondition{Type: cond, Status: corev1.ConditionFalse, Reason: "Failing", LastTransitionTime: metav1.NewTime(f.clk.Now().Add(-since))}
		if cond == corev1.NodeReady {
			conds = []corev1.NodeCondition{bad}
		} else {
			conds = append(conds, bad)
		}
	}
	nc := fixtures.NodeClaim(name, fixtures.WithNodeClass("default"), fixtures.WithProviderID(id), labels, fixtures.WithFinalizers(v1.TerminationFinalizer))
	ExpectApplied(f.ctx, t, e.Client, nc, fixtures.Node(name, fixtures.WithProviderID(id), labels, fixtures.WithNodeConditions(conds...)))
}

func (f *fixture) reconcile(t *testing.T, name string) reconcile.Result {
	t.Helper()
	res, err := f.ctrl.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) claim(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.Client.Get(f.ctx, types.NamespacedName{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

// A node Ready=False for longer than the policy's 30 minutes has its
// NodeClaim deleted with a termination timestamp of now (a forceful drain);
// before that, the controller waits exactly until the toleration ends.
func TestUnhealthyNodeIsReplacedAfterItsToleration(t *testing.T) {
	f := setup(t)
	f.node(t, "sick", "default", corev1.NodeReady, 20*time.Minute)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		f.node(t, n, "default", "", 0)
	}
	if res := f.reconcile(t, "sick"); res.RequeueAfter != 10*time.Minute {
		t.Fatalf("requeue after %s, want the 10 minutes left of the toleration", res.RequeueAfter)
	}
	if nc := f.claim(t, "sick"); !nc.DeletionTimestamp.IsZero() {
		t.Fatal("deleted before its toleration ended")
	}
	f.clk.Step(10 * time.Minute)
	f.reconcile(t, "sick")
	nc := f.claim(t, "sick") // the termination finalizer keeps it
	if nc.DeletionTimestamp.IsZero() {
		t.Fatal("the unhealthy node's NodeClaim was not deleted")
	}
	if got := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; got != f.clk.Now().UTC().Format(time.RFC3339) {
		t.Fatalf("termination timestamp %q, want now", got)
	}
	for _, n := range []string{"a", "b"} {
		f.reconcile(t, n)
		if !f.claim(t, n).DeletionTimestamp.IsZero() {
			t.Fatalf("healthy node %s deleted", n)
		}
	}
}

// Policies whose action is not replacement (reboot) are not the legacy
// controller's: a node matching only one is left alone.
func TestRebootPoliciesAreNotActedOn(t *testing.T) {
	f := setup(t)
	f.node(t, "kernel", "default", "KernelReady", time.Hour)
	if res := f.reconcile(t, "kernel"); res.RequeueAfter != 0 || !f.claim(t, "kernel").DeletionTimestamp.IsZero() {
		t.Fatalf("a node matching only a reboot policy was acted on (requeue %s)", res.RequeueAfter)
	}
}

// With more than 20% of a NodePool's nodes unhealthy nothing of it is
// repaired and a NodeRepairBlocked warning says why; another pool is not
// held back by it.
func TestNoRepairAbove20PercentUnhealthy(t *testing.T) {
	f := setup(t)
	for _, n := range []string{"s1", "s2", "s3"} {
		f.node(t, n, "default", corev1.NodeReady, time.Hour)
	}
	for _, n := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7"} {
		f.node(t, n, "default", "", 0)
	}
	f.node(t, "other-sick", "other", corev1.NodeReady, time.Hour)
	for _, n := range []string{"o1", "o2", "o3", "o4", "o5"} {
		f.node(t, n, "other", "", 0)
	}
	if res := f.reconcile(t, "s1"); res.RequeueAfter != legacyrepair.BlockedRequeue {
		t.Fatalf("requeue %s, want %s while blocked", res.RequeueAfter, legacyrepair.BlockedRequeue)
	}
	if !f.claim(t, "s1").DeletionTimestamp.IsZero() {
		t.Fatal("repaired with 3 of 10 nodes unhealthy")
	}
	select {
	case ev := <-f.rec.Events:
		if !strings.Contains(ev, legacyrepair.EventNodeRepairBlocked) || !strings.Contains(ev, "nodepool default") {
			t.Fatalf("event %q, want NodeRepairBlocked naming nodepool default", ev)
		}
	default:
		t.Fatal("no NodeRepairBlocked event")
	}
	f.reconcile(t, "other-sick")
	if f.claim(t, "other-sick").DeletionTimestamp.IsZero() {
		t.Fatal("1 of 6 unhealthy in pool other: not repaired")
	}
	var list v1.NodeClaimList
	if err := e.Client.List(f.ctx, &list, client.MatchingLabels{v1.NodePoolLabelKey: "default"}); err != nil || len(list.Items) != 10 {
		t.Fatalf("pool default has %d NodeClaims (%v), want all 10", len(list.Items), err)
	}
}
