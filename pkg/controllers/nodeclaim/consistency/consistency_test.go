package consistency_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/consistency"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// kwok is a cloud provider whose only answer is its NodeClass kind.
type kwok struct{ cloudprovider.CloudProvider }

func (kwok) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&kwokv1alpha1.KWOKNodeClass{}}
}

type fixture struct {
	ctx      context.Context
	clk      *clocktesting.FakeClock
	recorder *record.FakeRecorder
	ctrl     *consistency.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	clk := clocktesting.NewFakeClock(time.Now())
	rec := record.NewFakeRecorder(100)
	return &fixture{ctx: ctx, clk: clk, recorder: rec, ctrl: consistency.NewController(e.Client, kwok{}, clk, rec)}
}

// launched creates an initialized NodeClaim that requested 2 cpu and expected
// 4 cpu and 16Gi of memory, and its Node with the given capacity.
func (f *fixture) launched(t *testing.T, name string, nodeCapacity corev1.ResourceList, opts ...func(*v1.NodeClaim)) *v1.NodeClaim {
	t.Helper()
	id := "kwok://" + name
	nc := fixtures.NodeClaim(name, fixtures.WithNodeClass("default"), fixtures.WithProviderID(id),
		fixtures.WithCapacity(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}))
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	for _, o := range opts {
		o(nc)
	}
	ExpectApplied(f.ctx, t, e.Client, nc, fixtures.Node(name, fixtures.WithProviderID(id), fixtures.WithCapacity(nodeCapacity)))
	return nc
}

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

func TestNodeWithLessCapacityThanPromisedFailsTheCheck(t *testing.T) {
	f := setup(t)
	nc := f.launched(t, "small", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("16Gi")})
	res := ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if res.RequeueAfter != consistency.ScanPeriod {
		t.Fatalf("RequeueAfter %v, want the scan period", res.RequeueAfter)
	}
	want := "Warning FailedConsistencyCheck expected 4 of resource cpu, but found 3 (75.0% of expected)"
	if evs := f.events(); len(evs) != 1 || evs[0] != want {
		t.Fatalf("events %q, want [%q]", evs, want)
	}
	got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	c := got.StatusConditions().Get(v1.ConditionTypeConsistentStateFound)
	if c == nil || !c.IsFalse() || c.Reason != "ConsistencyCheckFailed" || c.Message != "Consistency Check Failed" {
		t.Fatalf("ConsistentStateFound %+v", c)
	}
	if !got.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
		t.Fatal("the lifecycle conditions were lost")
	}
	// Within the scan period nothing is checked again.
	if res := ExpectReconciled(f.ctx, t, f.ctrl, nc); res.RequeueAfter <= 0 || res.RequeueAfter > consistency.ScanPeriod {
		t.Fatalf("RequeueAfter %v within the scan period", res.RequeueAfter)
	}
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("checked again within the scan period: %q", evs)
	}
	// The next scan repeats the issue, but the event only once per dedupe window.
	f.clk.Step(consistency.ScanPeriod)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if evs := f.events(); len(evs) != 1 || evs[0] != want {
		t.Fatalf("next scan: events %q", evs)
	}
}

func TestNodeAsPromisedIsConsistent(t *testing.T) {
	f := setup(t)
	// Memory was not requested, so less of it is no issue; 90% of the cpu is enough.
	nc := f.launched(t, "fine", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3600m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		func(nc *v1.NodeClaim) {
			nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		})
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("events %q", evs)
	}
	got := ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeConsistentStateFound); c == nil || !c.IsTrue() {
		t.Fatalf("ConsistentStateFound %+v", c)
	}
	if !got.StatusConditions().Root().IsTrue() {
		t.Fatal("Ready is no longer True")
	}
}

func TestUninitializedOrUnmanagedNodeClaimsAreNotChecked(t *testing.T) {
	f := setup(t)
	nc := f.launched(t, "booting", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	nc.StatusConditions().SetUnknown(v1.ConditionTypeInitialized, "NotReady", "booting")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	other := f.launched(t, "other", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, func(nc *v1.NodeClaim) {
		nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "example.com", Kind: "OtherNodeClass", Name: "x"}
	})
	ExpectReconciled(f.ctx, t, f.ctrl, other)
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("events %q", evs)
	}
	if c := ExpectExists(f.ctx, t, e.Client, other.DeepCopy()).StatusConditions().Get(v1.ConditionTypeConsistentStateFound); c != nil {
		t.Fatalf("unmanaged NodeClaim got %+v", c)
	}
	if strings.Contains(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()).StatusConditions().Get(v1.ConditionTypeConsistentStateFound).Reason, "Failed") {
		t.Fatal("uninitialized NodeClaim failed the check")
	}
}
