package kwok_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestCreatePicksCheapestCompatibleOfferingAndWritesTheNode(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true))
	nc := nodeClaim("claim-a", "default",
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c-4x-amd64-linux", "m-2x-amd64-linux", "m-2x-arm64-linux"),
		req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-b", "test-zone-c"),
		req("example.com/custom", corev1.NodeSelectorOpIn, "yes"),
	)
	ExpectApplied(ctx, t, e.Client, nc)

	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// m-2x (2 vCPU, 16Gi: 0.05 + 0.0172) is cheaper than c-4x (4 vCPU, 8Gi: 0.1 + 0.0086).
	if got := launched.Labels[corev1.LabelInstanceTypeStable]; got != "m-2x-amd64-linux" {
		t.Fatalf("launched %s, want the cheapest compatible type m-2x-amd64-linux", got)
	}
	if z := launched.Labels[corev1.LabelTopologyZone]; z != "test-zone-b" && z != "test-zone-c" {
		t.Fatalf("zone %s not among the allowed ones", z)
	}
	if launched.Status.ProviderID != "kwok://claim-a" || launched.Status.Capacity.Cpu().Value() != 2 ||
		launched.Status.Allocatable.Cpu().MilliValue() != 1900 {
		t.Fatalf("launched status: %+v", launched.Status)
	}

	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "claim-a"}})
	wantLabels := map[string]string{
		corev1.LabelInstanceTypeStable:      "m-2x-amd64-linux",
		corev1.LabelTopologyZone:            launched.Labels[corev1.LabelTopologyZone],
		v1.CapacityTypeLabelKey:             v1.CapacityTypeOnDemand,
		corev1.LabelArchStable:              "amd64",
		corev1.LabelOSStable:                "linux",
		"beta.kubernetes.io/arch":           "amd64",
		"beta.kubernetes.io/os":             "linux",
		v1.NodePoolLabelKey:                 "default",
		corev1.LabelHostname:                "claim-a",
		kwok.NodeClaimLabelKey:              "claim-a",
		kwok.NodeClassLabelKey:              "default",
		kwokv1alpha1.InstanceFamilyLabelKey: "m",
		kwokv1alpha1.InstanceSizeLabelKey:   "2",
		kwokv1alpha1.InstanceCPULabelKey:    "2",
		kwokv1alpha1.InstanceMemoryLabelKey: "16Gi",
		kwok.KwokPartitionLabelKey:          "a",
		"example.com/custom":                "yes",
		"team":                              "a",
	}
	for k, v := range wantLabels {
		if node.Labels[k] != v {
			t.Errorf("node label %s=%q, want %q", k, node.Labels[k], v)
		}
	}
	// The beta labels are the simulated kubelet's (kube-controller-manager
	// would patch them on otherwise), not the instance's.
	for _, k := range []string{"beta.kubernetes.io/arch", "beta.kubernetes.io/os"} {
		if v, ok := launched.Labels[k]; ok {
			t.Errorf("launched NodeClaim carries the Node's label %s=%q", k, v)
		}
	}
	if node.Annotations[kwok.FakeNodeKey] != "fake" || node.Annotations["example.com/owner"] != "me" {
		t.Errorf("annotations %v", node.Annotations)
	}
	if node.Spec.ProviderID != "kwok://claim-a" {
		t.Errorf("providerID %s", node.Spec.ProviderID)
	}
	taints := map[string]corev1.TaintEffect{}
	for _, tn := range node.Spec.Taints {
		taints[tn.Key] = tn.Effect
	}
	if taints[v1.UnregisteredTaintKey] != corev1.TaintEffectNoExecute || taints["dedicated"] != corev1.TaintEffectNoSchedule || taints["example.com/booting"] != corev1.TaintEffectNoSchedule {
		t.Errorf("taints %v", node.Spec.Taints)
	}
	if node.Status.Capacity.Memory().Value() != 16<<30 || node.Status.Allocatable.Cpu().MilliValue() != 1900 || node.Status.Capacity.Pods().Value() != 32 {
		t.Errorf("capacity %v allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
}

func TestCreatePrefersSpotWhenAllowed(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true))
	nc := nodeClaim("claim-spot", "default", req(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"))
	ExpectApplied(ctx, t, e.Client, nc)
	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// The smallest type that allocates 1 vCPU is a 2 vCPU c type (1 vCPU leaves 900m).
	if launched.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot || launched.Labels[kwokv1alpha1.InstanceFamilyLabelKey] != "c" || launched.Labels[kwokv1alpha1.InstanceCPULabelKey] != "2" {
		t.Fatalf("expected the cheapest fitting offering (spot c-2x), got %v", launched.Labels)
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true))
	nc := nodeClaim("claim-twice", "default")
	ExpectApplied(ctx, t, e.Client, nc)
	first, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// A restarted controller (a fresh provider with no memory) launching again.
	catalog, _ := kwok.LoadInstanceTypes("")
	restarted := kwok.New(ctx, e.Client, nil, catalog)
	second, err := restarted.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status.ProviderID != second.Status.ProviderID || first.Labels[corev1.LabelInstanceTypeStable] != second.Labels[corev1.LabelInstanceTypeStable] {
		t.Fatalf("second Create launched something else: %v vs %v", first.Labels, second.Labels)
	}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("expected one node, got %d", len(nodes.Items))
	}
}

func TestCreateErrors(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("not-ready", 0, false), nodeClass("default", 0, true))

	if _, err := cp.Create(ctx, nodeClaim("c1", "missing")); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("missing NodeClass: want NodeClassNotReadyError, got %v", err)
	}
	if _, err := cp.Create(ctx, nodeClaim("c2", "not-ready")); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("not ready NodeClass: want NodeClassNotReadyError, got %v", err)
	}
	if _, err := cp.Create(ctx, nodeClaim("c3", "default", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x"))); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("impossible arch: want InsufficientCapacityError, got %v", err)
	}
	huge := nodeClaim("c4", "default")
	huge.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
	if _, err := cp.Create(ctx, huge); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("1000 vCPU: want InsufficientCapacityError, got %v", err)
	}
	other := nodeClaim("c5", "default")
	other.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	if _, err := cp.Create(ctx, other); !cloudprovider.IsCreateError(err) {
		t.Errorf("foreign NodeClass: want CreateError, got %v", err)
	}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(ctx, nodes); err != nil || len(nodes.Items) != 0 {
		t.Fatalf("failed launches must write no node: %v %d", err, len(nodes.Items))
	}
}

func TestNodeAppearsAfterRegistrationDelay(t *testing.T) {
	ctx, cp, clk := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("slow", 30*time.Second, true))
	nc := nodeClaim("claim-slow", "slow")
	ExpectApplied(ctx, t, e.Client, nc)

	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// Launch returned; the node is not there yet, but the instance is known.
	ExpectNotFound(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "claim-slow"}})
	if got, err := cp.Get(ctx, launched.Status.ProviderID); err != nil || got.Name != "claim-slow" {
		t.Fatalf("Get of a pending launch: %v %v", got, err)
	}
	if list, _ := cp.List(ctx); len(list) != 1 || list[0].Name != "claim-slow" {
		t.Fatalf("List should report the pending launch, got %d", len(list))
	}
	// Creating again while pending returns the same launch.
	again, err := cp.Create(ctx, nc)
	if err != nil || again.Status.ProviderID != launched.Status.ProviderID {
		t.Fatalf("Create while pending: %v %v", again, err)
	}

	Eventually(t, 10*time.Second, func() error {
		if !clk.HasWaiters() {
			return errors.New("launch timer not armed yet")
		}
		return nil
	})
	clk.Step(29 * time.Second)
	ExpectNotFound(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "claim-slow"}})
	clk.Step(time.Second)
	Eventually(t, 10*time.Second, func() error {
		return e.Client.Get(ctx, clientKey("claim-slow"), &corev1.Node{})
	})
	if list, _ := cp.List(ctx); len(list) != 1 {
		t.Fatalf("the written node and the finished launch must be listed once, got %d", len(list))
	}
}

func TestPendingLaunchIsDroppedWhenCancelledOrClaimGone(t *testing.T) {
	ctx, cp, clk := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("slow", time.Minute, true))
	a, b := nodeClaim("claim-deleted-instance", "slow"), nodeClaim("claim-gone", "slow")
	ExpectApplied(ctx, t, e.Client, a, b)
	for _, nc := range []*v1.NodeClaim{a, b} {
		launched, err := cp.Create(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		nc.Status.ProviderID = launched.Status.ProviderID
	}
	// a: the instance is deleted before it registered.
	if err := cp.Delete(ctx, a); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete of a pending launch should finish at once, got %v", err)
	}
	if _, err := cp.Get(ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after Delete: %v", err)
	}
	// b: its NodeClaim disappears (e.g. deleted by a user) before the delay ends.
	ExpectDeleted(ctx, t, e.Client, b)
	ExpectNotFound(ctx, t, e.Client, b)

	Eventually(t, 10*time.Second, func() error {
		if clk.Waiters() != 1 {
			return fmt.Errorf("want only b's timer armed, %d armed", clk.Waiters())
		}
		return nil
	})
	clk.Step(time.Minute)
	Eventually(t, 10*time.Second, func() error {
		if list, err := cp.List(ctx); err != nil || len(list) != 0 {
			return fmt.Errorf("still listed: %d %v", len(list), err)
		}
		return nil
	})
	ExpectNotFound(ctx, t, e.Client,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.Name}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b.Name}})
}

func TestDeleteGetList(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true))
	nc := nodeClaim("claim-del", "default")
	ExpectApplied(ctx, t, e.Client, nc)
	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// Unrelated nodes are not instances.
	ExpectApplied(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-ours"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-1"}})
	list, err := cp.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "claim-del" || list[0].Status.ProviderID != "kwok://claim-del" || list[0].CreationTimestamp.IsZero() {
		t.Fatalf("List: %v %+v", err, list)
	}
	got, err := cp.Get(ctx, launched.Status.ProviderID)
	if err != nil || got.Labels[corev1.LabelInstanceTypeStable] != launched.Labels[corev1.LabelInstanceTypeStable] {
		t.Fatalf("Get: %v %v", got, err)
	}
	if _, err := cp.Get(ctx, "kwok://not-ours"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get of a foreign node: %v", err)
	}
	if _, err := cp.Get(ctx, "aws:///x"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get of a foreign providerID: %v", err)
	}

	// The node carries Karpenter's finalizer, as after registration: deleting
	// the instance leaves it terminating, and the instance counts as gone.
	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "claim-del"}})
	node.Finalizers = []string{v1.TerminationFinalizer}
	ExpectApplied(ctx, t, e.Client, node)
	nc.Status.ProviderID = launched.Status.ProviderID
	if err := cp.Delete(ctx, nc); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete: want NodeClaimNotFound once terminated, got %v", err)
	}
	node = ExpectExists(ctx, t, e.Client, node)
	if node.DeletionTimestamp.IsZero() {
		t.Fatal("node was not deleted")
	}
	if _, err := cp.Get(ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get of a terminating instance: %v", err)
	}
	if list, _ := cp.List(ctx); len(list) != 0 {
		t.Fatalf("List must not report terminating instances: %d", len(list))
	}
	ExpectFinalizersRemoved(ctx, t, e.Client, node)
	ExpectNotFound(ctx, t, e.Client, node)
	if err := cp.Delete(ctx, nc); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete of a gone instance: %v", err)
	}
}

func TestNodeClassReadiness(t *testing.T) {
	ctx, _, clk := setup(t)
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}
	ExpectApplied(ctx, t, e.Client, nc)
	if nc.StatusConditions().Root() != nil {
		t.Fatalf("a fresh NodeClass has no conditions yet: %v", nc.Status.Conditions)
	}
	ctrl := kwok.NewNodeClassController(e.Client, clk)
	ExpectReconciled(ctx, t, ctrl, nc)
	nc = ExpectExists(ctx, t, e.Client, nc)
	ready := nc.StatusConditions().Get(status.ConditionReady)
	if !ready.IsTrue() || !ready.LastTransitionTime.Time.Equal(clk.Now().Truncate(time.Second)) {
		t.Fatalf("Ready: %+v (clock %v)", ready, clk.Now())
	}
	// Reconciling again changes nothing.
	rv := nc.ResourceVersion
	ExpectReconciled(ctx, t, ctrl, nc)
	if ExpectExists(ctx, t, e.Client, nc).ResourceVersion != rv {
		t.Fatal("an unchanged NodeClass was written again")
	}
}
