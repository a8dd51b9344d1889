package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func TestLaunchRegisterInitialize(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-1", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	createdBefore := createdInPool(t, "default")

	// Launch; the KWOK node is written at once (no registration delay), so the
	// same pass registers it too.
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !condition(nc, v1.ConditionTypeLaunched).IsTrue() {
		t.Fatalf("Launched: %+v", condition(nc, v1.ConditionTypeLaunched))
	}
	if !strings.HasPrefix(nc.Status.ProviderID, "kwok://") || nc.Status.Capacity.Cpu().Value() < 2 || nc.Status.Allocatable.Cpu().IsZero() {
		t.Fatalf("launch did not populate status: %+v", nc.Status)
	}
	if nc.Labels[corev1.LabelInstanceTypeStable] == "" || nc.Labels[corev1.LabelTopologyZone] == "" || nc.Labels[v1.CapacityTypeLabelKey] == "" || nc.Labels["team"] != "a" {
		t.Fatalf("launch did not resolve labels: %v", nc.Labels)
	}
	if !condition(nc, v1.ConditionTypeLaunched).LastTransitionTime.Time.Equal(f.clk.Now().Truncate(time.Second)) {
		t.Fatalf("conditions must be stamped with the controller's clock: %v vs %v", condition(nc, v1.ConditionTypeLaunched).LastTransitionTime, f.clk.Now())
	}
	if len(nc.Finalizers) != 1 || nc.Finalizers[0] != v1.TerminationFinalizer {
		t.Fatalf("finalizers %v", nc.Finalizers)
	}

	// Registration.
	if !condition(nc, v1.ConditionTypeRegistered).IsTrue() || nc.Status.NodeName != nc.Name {
		t.Fatalf("Registered: %+v nodeName %q", condition(nc, v1.ConditionTypeRegistered), nc.Status.NodeName)
	}
	node := ExpectExists(f.ctx, t, e.Client, nodeOf(nc))
	if node.Labels[v1.NodeRegisteredLabelKey] != "true" || node.Labels["team"] != "a" || node.Labels[v1.NodePoolLabelKey] != "default" {
		t.Fatalf("node labels %v", node.Labels)
	}
	if node.Annotations["example.com/owner"] != "me" {
		t.Fatalf("node annotations %v", node.Annotations)
	}
	if hasTaintKey(node, v1.UnregisteredTaintKey) || !hasTaintKey(node, "dedicated") || !hasTaintKey(node, "example.com/booting") {
		t.Fatalf("node taints %v", node.Spec.Taints)
	}
	if len(node.Finalizers) != 1 || node.Finalizers[0] != v1.TerminationFinalizer {
		t.Fatalf("node finalizers %v", node.Finalizers)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != nc.UID {
		t.Fatalf("node owner references %v", node.OwnerReferences)
	}
	if c := ExpectExists(f.ctx, t, e.Client, nodePool("default")).StatusConditions().Get(v1.ConditionTypeNodeRegistrationHealthy); !c.IsTrue() {
		t.Fatalf("NodePool NodeRegistrationHealthy after a registration: %+v", c)
	}
	if got := createdInPool(t, "default"); got != createdBefore+1 {
		t.Fatalf("karpenter_nodes_created_total went from %v to %v", createdBefore, got)
	}

	// Initialization waits for Ready...
	if c := condition(nc, v1.ConditionTypeInitialized); !c.IsUnknown() || c.Reason != "NodeNotReady" {
		t.Fatalf("Initialized before Ready: %+v", c)
	}
	makeReady(f, t, node)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	// ... and for the startup taint to go.
	if c := condition(nc, v1.ConditionTypeInitialized); !c.IsUnknown() || c.Reason != "StartupTaintsExist" {
		t.Fatalf("Initialized with a startup taint: %+v", c)
	}
	removeTaint(f, t, node, "example.com/booting")
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !condition(nc, v1.ConditionTypeInitialized).IsTrue() || !nc.StatusConditions().Root().IsTrue() {
		t.Fatalf("Initialized %+v Ready %+v", condition(nc, v1.ConditionTypeInitialized), nc.StatusConditions().Root())
	}
	if ExpectExists(f.ctx, t, e.Client, node).Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Fatal("node not labelled initialized")
	}
	// Once Ready, further passes write nothing.
	rv := nc.ResourceVersion
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if ExpectExists(f.ctx, t, e.Client, nc).ResourceVersion != rv {
		t.Fatal("a settled NodeClaim was written again")
	}
	if got := createdInPool(t, "default"); got != createdBefore+1 {
		t.Fatalf("karpenter_nodes_created_total counts one registration, got %v more", got-createdBefore)
	}
}

func TestInitializationWaitsForEphemeralTaintsAndExtendedResources(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-gpu", "default")
	nc.Spec.StartupTaints = nil
	nc.Spec.Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if it := ExpectExists(f.ctx, t, e.Client, nc).Labels[corev1.LabelInstanceTypeStable]; it != "g-4x-amd64-linux" {
		t.Fatalf("expected the GPU type, got %q", it)
	}
	node := ExpectExists(f.ctx, t, e.Client, nodeOf(nc))
	// Ready, but the boot-time not-ready taint is still there.
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); c.Reason != "KnownEphemeralTaintsExist" {
		t.Fatalf("expected to wait for the not-ready taint: %+v", c)
	}
	removeTaint(f, t, node, corev1.TaintNodeNotReady)
	// The device plugin has not registered the GPU yet.
	node = ExpectExists(f.ctx, t, e.Client, node)
	delete(node.Status.Allocatable, "example.com/gpu")
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); c.Reason != "ResourceNotRegistered" {
		t.Fatalf("expected to wait for the extended resource: %+v", c)
	}
	node = ExpectExists(f.ctx, t, e.Client, node)
	node.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); !c.IsTrue() {
		t.Fatalf("expected Initialized: %+v", c)
	}
}

func TestInsufficientCapacityDeletesTheNodeClaim(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-ice", "default", v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"s390x"}})
	ExpectApplied(f.ctx, t, e.Client, nc)
	before := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonInsufficientCapacity, "default", "", "", metrics.TerminationModeGraceful))
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	// Deleted, held only by our finalizer; the next pass finalizes it (nothing was launched).
	if nc = ExpectExists(f.ctx, t, e.Client, nc); nc.DeletionTimestamp.IsZero() {
		t.Fatal("NodeClaim not deleted after insufficient capacity")
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if got := testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonInsufficientCapacity, "default", "", "", metrics.TerminationModeGraceful)); got != before+1 {
		t.Fatalf("disrupted_total{reason=insufficient_capacity}: %v -> %v", before, got)
	}
	if !drained(f, "InsufficientCapacityError") {
		t.Fatal("no InsufficientCapacityError event")
	}
}

// A NodeClaim whose NodeClass is not ready is deleted by its first launch,
// counted as nodeclass_not_ready, with no event and nothing launched.
func TestNodeClassNotReadyDeletesTheNodeClaim(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodeClass("unready", 0, false))
	nc := nodeClaim("claim-unready", "unready")
	ExpectApplied(f.ctx, t, e.Client, nc)
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonNodeClassNotReady, "default", "", "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	// Deleted, held only by our finalizer; the next pass finalizes it.
	if nc = ExpectExists(f.ctx, t, e.Client, nc); nc.DeletionTimestamp.IsZero() {
		t.Fatalf("NodeClaim not deleted when its NodeClass is not ready; Launched: %+v", condition(nc, v1.ConditionTypeLaunched))
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if got := testutil.ToFloat64(disrupted); got != before+1 {
		t.Fatalf("disrupted_total{reason=nodeclass_not_ready}: %v -> %v", before, got)
	}
	if list, _ := f.cp.List(f.ctx); len(list) != 0 {
		t.Fatalf("instances launched for a NodeClass that is not ready: %d", len(list))
	}
	select {
	case ev := <-f.recorder.Events:
		t.Fatalf("unexpected event %q", ev)
	default:
	}
}

func TestCreateErrorSetsLaunchedFalseWithReason(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-foreign", "default")
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconcileFailed(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeLaunched); !c.IsFalse() || c.Reason != "UnsupportedNodeClass" {
		t.Fatalf("Launched: %+v", c)
	}
}

// A launch that keeps failing is retried until the launch timeout, which
// deletes the NodeClaim and counts it as launch_timeout.
func TestLaunchTimeout(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-never", "default")
	nc.Spec.NodeClassRef = fixtures.EC2NodeClassRef("default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonLaunchTimeout, "default", "", "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	ExpectReconcileFailed(f.ctx, t, f.ctrl, nc)
	f.clk.Step(4 * time.Minute)
	ExpectReconcileFailed(f.ctx, t, f.ctrl, nc)
	if nc = ExpectExists(f.ctx, t, e.Client, nc); !nc.DeletionTimestamp.IsZero() {
		t.Fatal("deleted before the launch timeout")
	}
	stepPast(f, nc, lifecycle.LaunchTimeout)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if got := testutil.ToFloat64(disrupted); got != before+1 {
		t.Fatalf("disrupted_total{reason=launch_timeout}: %v -> %v", before, got)
	}
}

// stepPast moves the fake clock a second past timeout after nc's creation.
// The API server stamps creationTimestamp from the real clock, whole seconds,
// some time after the fake clock started (seconds, on a loaded machine): a
// fixed step from the clock's start fell short of the timeout.
func stepPast(f *fixture, nc *v1.NodeClaim, timeout time.Duration) {
	if d := nc.CreationTimestamp.Add(timeout + time.Second).Sub(f.clk.Now()); d > 0 {
		f.clk.Step(d)
	}
}

func TestRegistrationTimeoutDeletesClaimAndInstance(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodeClass("slow", time.Hour, true))
	nc := nodeClaim("claim-slow", "slow")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !condition(nc, v1.ConditionTypeLaunched).IsTrue() || condition(nc, v1.ConditionTypeRegistered).Reason != "NodeNotFound" {
		t.Fatalf("expected launched and waiting for its node: %v", nc.Status.Conditions)
	}
	f.clk.Step(14 * time.Minute)
	res := ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if ExpectExists(f.ctx, t, e.Client, nc).DeletionTimestamp != nil {
		t.Fatal("deleted before the registration timeout")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute+time.Second {
		t.Fatalf("expected to be called back by the timeout, got %v", res.RequeueAfter)
	}
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonRegistrationTimeout, "default", nc.Labels[v1.CapacityTypeLabelKey], "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	stepPast(f, nc, lifecycle.RegistrationTimeout)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if got := testutil.ToFloat64(disrupted); got != before+1 {
		t.Fatalf("disrupted_total{reason=registration_timeout}: %v -> %v", before, got)
	}
	if c := ExpectExists(f.ctx, t, e.Client, nodePool("default")).StatusConditions().Get(v1.ConditionTypeNodeRegistrationHealthy); !c.IsFalse() || !strings.Contains(c.Message, "claim-slow") {
		t.Fatalf("NodePool NodeRegistrationHealthy after a registration timeout: %+v", c)
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc) // finalize: the pending instance is cancelled
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if list, _ := f.cp.List(f.ctx); len(list) != 0 {
		t.Fatalf("instance survived its NodeClaim: %d", len(list))
	}
	// Even once the registration delay has passed, no node appears.
	f.clk.Step(time.Hour)
	ExpectNotFound(f.ctx, t, e.Client, nodeOf(nc))
}

// Deleting a NodeClaim deletes its Node, whose own finalizer (the node
// termination controller) lets it go; only then is the NodeClaim finalized.
func TestDeletingTheNodeClaimTerminatesInstanceAndNode(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-del", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	node := ExpectExists(f.ctx, t, e.Client, nodeOf(nc))
	launched := ExpectExists(f.ctx, t, e.Client, nc)
	before := testutil.ToFloat64(metrics.NodeClaimsTerminatedTotal.WithLabelValues("default", launched.Labels[v1.CapacityTypeLabelKey], launched.Labels[corev1.LabelTopologyZone]))
	countBefore, sumBefore := histogram(t, metrics.NodeClaimTerminationDuration.WithLabelValues("default"))
	instanceBefore, _ := histogram(t, metrics.InstanceTerminationDuration.WithLabelValues("default"))

	ExpectDeleted(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if ExpectExists(f.ctx, t, e.Client, node).DeletionTimestamp.IsZero() {
		t.Fatal("node not deleted with its NodeClaim")
	}
	if ExpectExists(f.ctx, t, e.Client, nc).DeletionTimestamp.IsZero() {
		t.Fatal("NodeClaim finalized before its node was gone")
	}
	ExpectReconciled(f.ctx, t, termination.NewController(e.Client, f.cp, f.clk, f.recorder), node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	// The drain took 90 s on the controller's clock.
	deleted := ExpectExists(f.ctx, t, e.Client, nc).DeletionTimestamp.Time
	f.clk.SetTime(deleted.Add(90 * time.Second))
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if count, sum := histogram(t, metrics.NodeClaimTerminationDuration.WithLabelValues("default")); count != countBefore+1 || sum-sumBefore != 90 {
		t.Fatalf("nodeclaims_termination_duration_seconds{default}: %d samples (+%v s), want one more of 90 s", count-countBefore, sum-sumBefore)
	}
	// The instance was being terminated (InstanceTerminating True) when the
	// NodeClaim was finalized: one observation of how long that took.
	if count, _ := histogram(t, metrics.InstanceTerminationDuration.WithLabelValues("default")); count != instanceBefore+1 {
		t.Fatalf("nodeclaims_instance_termination_duration_seconds{default}: %d more samples, want 1", count-instanceBefore)
	}
	if list, _ := f.cp.List(f.ctx); len(list) != 0 {
		t.Fatalf("instances left: %d", len(list))
	}
	after := testutil.ToFloat64(metrics.NodeClaimsTerminatedTotal.WithLabelValues("default", launched.Labels[v1.CapacityTypeLabelKey], launched.Labels[corev1.LabelTopologyZone]))
	if after != before+1 {
		t.Fatalf("nodeclaims_terminated_total %v -> %v", before, after)
	}
}

func TestDeletingTheNodeDeletesItsNodeClaim(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-node-del", "default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	node := ExpectExists(f.ctx, t, e.Client, nodeOf(nc))

	ExpectDeleted(f.ctx, t, e.Client, node) // kubectl delete node
	if ExpectExists(f.ctx, t, e.Client, node).DeletionTimestamp.IsZero() {
		t.Fatal("node should be held by Karpenter's finalizer")
	}
	ExpectReconciled(f.ctx, t, termination.NewController(e.Client, f.cp, f.clk, f.recorder), node)
	if ExpectExists(f.ctx, t, e.Client, nc).DeletionTimestamp.IsZero() {
		t.Fatal("NodeClaim not deleted with its node")
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc, node)
}

func TestMultipleNodesForOneProviderID(t *testing.T) {
	f := setup(t)
	ExpectApplied(f.ctx, t, e.Client, nodeClass("slow", time.Hour, true))
	nc := nodeClaim("claim-multi", "slow")
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	for _, name := range []string{"impostor-1", "impostor-2"} {
		ExpectApplied(f.ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1ObjectMeta(name), Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}})
	}
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeRegistered); !c.IsFalse() || c.Reason != "MultipleNodesFound" {
		t.Fatalf("Registered: %+v", c)
	}
	_ = kwok.ProviderIDPrefix
}

// drained reports whether an event with the reason was recorded.
func drained(f *fixture, reason string) bool {
	for {
		select {
		case ev := <-f.recorder.Events:
			if strings.Contains(ev, reason) {
				return true
			}
		default:
			return false
		}
	}
}

// Initialization holds for one boot: while a reboot is in progress (the
// NodeClaim's Rebooting is True, Initialized Unknown as the reboot controller
// leaves it), the Ready node does not initialize again; once the reboot ended
// it does.
func TestInitializationWaitsForTheEndOfAReboot(t *testing.T) {
	f := setup(t)
	nc := nodeClaim("claim-reboot", "default")
	nc.Spec.StartupTaints = nil
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	node := ExpectExists(f.ctx, t, e.Client, nodeOf(nc))
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	removeTaint(f, t, node, corev1.TaintNodeNotReady)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); !c.IsTrue() {
		t.Fatalf("expected Initialized: %+v", c)
	}
	// The reboot was issued.
	got := ExpectExists(f.ctx, t, e.Client, nc)
	got.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonIssued, "rebooting")
	got.StatusConditions().SetUnknown(v1.ConditionTypeInitialized, v1.RebootReasonRebooting, "node is rebooting")
	ExpectStatusUpdated(f.ctx, t, e.Client, got)
	node = ExpectExists(f.ctx, t, e.Client, node)
	delete(node.Labels, v1.NodeInitializedLabelKey)
	ExpectApplied(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); c.IsTrue() || c.Reason != v1.RebootReasonRebooting {
		t.Fatalf("initialized again during a reboot: %+v", c)
	}
	if _, ok := ExpectExists(f.ctx, t, e.Client, node).Labels[v1.NodeInitializedLabelKey]; ok {
		t.Fatal("the node was labelled initialized during a reboot")
	}
	// The reboot ended.
	got = ExpectExists(f.ctx, t, e.Client, nc)
	got.StatusConditions().SetFalse(v1.ConditionTypeRebooting, v1.RebootReasonSucceeded, "rebooted")
	ExpectStatusUpdated(f.ctx, t, e.Client, got)
	ExpectReconciled(f.ctx, t, f.ctrl, nc)
	if c := condition(ExpectExists(f.ctx, t, e.Client, nc), v1.ConditionTypeInitialized); !c.IsTrue() {
		t.Fatalf("not initialized after the reboot: %+v", c)
	}
	if ExpectExists(f.ctx, t, e.Client, node).Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Fatal("the node is not labelled initialized after the reboot")
	}
}
