package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

func cleanup(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.Background()
		ncs := &v1.NodeClaimList{}
		_ = testEnv.Client.List(ctx, ncs)
		for i := range ncs.Items {
			ExpectFinalizersRemoved(ctx, t, testEnv.Client, &ncs.Items[i])
		}
		ExpectCleanedUp(ctx, t, testEnv.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{})
		_ = testEnv.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		_ = testEnv.Client.DeleteAllOf(ctx, &appsv1.DaemonSet{}, client.InNamespace("default"))
	})
}

// nodeClaim is a NodeClaim of NodePool "default" for 3 cpu and 3 pods,
// tainted dedicated=x, requiring reqs (when none, a c-4x-amd64-linux in
// test-zone-a or test-zone-b).
func nodeClaim(name string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	if len(reqs) == 0 {
		reqs = []v1.NodeSelectorRequirementWithMinValues{
			fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c-4x-amd64-linux"),
			fixtures.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-a", "test-zone-b"),
		}
	}
	return fixtures.NodeClaim(name,
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}),
		fixtures.WithRequirements(reqs...),
		fixtures.WithRequests("cpu", "3", "pods", "3"),
		fixtures.WithTaints(corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}))
}

// node is a Ready node of 4 cpu (3900m allocatable) and 110 pods.
func node(name, providerID string, labels map[string]string) *corev1.Node {
	return fixtures.Node(name, fixtures.WithLabels(labels), fixtures.WithProviderID(providerID),
		fixtures.WithCapacity(fixtures.ResourceList("cpu", "4", "pods", "110")),
		fixtures.WithAllocatable(fixtures.ResourceList("cpu", "3900m", "pods", "110")),
		fixtures.WithNodeConditions(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}))
}

// pod is a pod bound to nodeName ("" for pending) requesting 1 cpu.
func pod(name, nodeName string) *corev1.Pod {
	return fixtures.Pod(name, fixtures.OnNode(nodeName), fixtures.WithRequests("cpu", "1"))
}

type fixture struct {
	ctx                                    context.Context
	clock                                  *clocktesting.FakeClock
	cluster                                *state.Cluster
	nodes, claims, pods, daemonSets, pools *informer.Controller
	namespaces, pvcs, pvs, storageClasses  *informer.Controller
}

func newFixture(t *testing.T) *fixture {
	cleanup(t)
	f := &fixture{ctx: context.Background(), clock: clocktesting.NewFakeClock(time.Now())}
	f.cluster = state.NewCluster(f.clock, testEnv.Client)
	f.nodes = informer.NewNodeController(testEnv.Client, f.cluster)
	f.claims = informer.NewNodeClaimController(testEnv.Client, f.cluster)
	f.pods = informer.NewPodController(testEnv.Client, f.cluster)
	f.daemonSets = informer.NewDaemonSetController(testEnv.Client, f.cluster)
	f.pools = informer.NewNodePoolController(testEnv.Client, f.cluster)
	f.namespaces = informer.NewNamespaceController(testEnv.Client, f.cluster)
	f.pvcs = informer.NewPersistentVolumeClaimController(testEnv.Client, f.cluster)
	f.pvs = informer.NewPersistentVolumeController(testEnv.Client, f.cluster)
	f.storageClasses = informer.NewStorageClassController(testEnv.Client, f.cluster)
	return f
}

func (f *fixture) synced(t *testing.T) bool {
	t.Helper()
	ok, err := f.cluster.Synced(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestSyncedOnlyOnceEveryNodeClaimAndNodeIsKnown(t *testing.T) {
	f := newFixture(t)
	if !f.synced(t) {
		t.Fatal("an empty cluster and an empty state are in sync")
	}
	nc := nodeClaim("nc-a")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	if f.synced(t) {
		t.Fatal("synced although the NodeClaim in the API is unknown to state")
	}
	ExpectReconciled(f.ctx, t, f.claims, nc)
	if !f.synced(t) {
		t.Fatal("not synced after the NodeClaim was recorded")
	}
	n := node("node-x", "", nil)
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	if f.synced(t) {
		t.Fatal("synced although the Node is unknown to state")
	}
	ExpectReconciled(f.ctx, t, f.nodes, n)
	if !f.synced(t) {
		t.Fatal("not synced after the Node was recorded")
	}
	// The claim launches in the API, state still holds the unlaunched copy.
	nc.Status.ProviderID = "kwok://nc-a"
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	if f.synced(t) {
		t.Fatal("synced although state does not know the claim launched")
	}
	ExpectReconciled(f.ctx, t, f.claims, nc)
	if !f.synced(t) {
		t.Fatal("not synced after the launch was recorded")
	}
	ExpectDeleted(f.ctx, t, testEnv.Client, n)
	ExpectReconciled(f.ctx, t, f.nodes, n)
	if len(f.cluster.Nodes()) != 1 {
		t.Fatalf("deleted node still in state: %d units", len(f.cluster.Nodes()))
	}
}

func TestInFlightClaimIsCapacitySizedByItsRequests(t *testing.T) {
	f := newFixture(t)
	nc := nodeClaim("nc-inflight")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	ExpectReconciled(f.ctx, t, f.namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	in, err := f.cluster.Snapshot(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ExistingNodes) != 1 {
		t.Fatalf("want 1 existing node, got %d", len(in.ExistingNodes))
	}
	en := in.ExistingNodes[0]
	if !en.InFlight || en.Initialized || en.Name != "nc-inflight" || en.NodePool != "default" {
		t.Fatalf("in-flight claim rendered as %+v", en)
	}
	if got := en.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("unlaunched claim allocatable cpu %s, want its requests (3)", got.String())
	}
	if en.Labels[corev1.LabelInstanceTypeStable] != "c-4x-amd64-linux" {
		t.Errorf("single-valued requirement not a label: %v", en.Labels)
	}
	if _, ok := en.Labels[corev1.LabelTopologyZone]; ok {
		t.Errorf("two-valued zone requirement must not become a label: %v", en.Labels)
	}
	if en.Labels[corev1.LabelHostname] != "nc-inflight" {
		t.Errorf("hostname of an in-flight claim: %v", en.Labels)
	}
	if len(en.Taints) != 1 || en.Taints[0].Key != "dedicated" {
		t.Errorf("taints of the claim not carried: %v", en.Taints)
	}
	if _, ok := in.Namespaces["default"]; !ok {
		t.Errorf("namespaces missing from the snapshot: %v", in.Namespaces)
	}

	// Launched: the provider's allocatable replaces the requests.
	nc.Status.ProviderID = "kwok://nc-inflight"
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3900m")}
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	sn := f.cluster.Nodes()
	if got := sn[0].Allocatable()[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3900m")) != 0 {
		t.Errorf("launched claim allocatable cpu %s, want 3900m", got.String())
	}
}

func TestNodeJoinsItsClaimAndCarriesItsPods(t *testing.T) {
	f := newFixture(t)
	nc := nodeClaim("nc-join")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	nc.Status.ProviderID = "kwok://nc-join"
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	n := node("kwok-nc-join", "kwok://nc-join", map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelTopologyZone: "test-zone-a"})
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	ExpectReconciled(f.ctx, t, f.nodes, n)
	p1, p2 := pod("p1", n.Name), pod("p2", n.Name)
	pending := pod("pending", "")
	ExpectApplied(f.ctx, t, testEnv.Client, p1, p2, pending)
	for _, p := range []*corev1.Pod{p1, p2, pending} {
		ExpectReconciled(f.ctx, t, f.pods, p)
	}
	sns := f.cluster.Nodes()
	if len(sns) != 1 {
		t.Fatalf("node and claim must be one unit of capacity, got %d", len(sns))
	}
	sn := sns[0]
	if sn.Name() != n.Name || sn.NodeClaim == nil || sn.InFlight() || len(sn.Pods) != 2 {
		t.Fatalf("joined node: name %s claim %v inflight %v pods %d", sn.Name(), sn.NodeClaim != nil, sn.InFlight(), len(sn.Pods))
	}
	if sn.Initialized() {
		t.Fatal("initialized before the claim says so")
	}
	// Not initialized yet: the claim's allocatable applies, not the node's partial one.
	if got := sn.Allocatable()[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("allocatable before initialization %s, want the claim's 3", got.String())
	}
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	sn = f.cluster.Nodes()[0]
	if !sn.Initialized() {
		t.Fatalf("not initialized after the claim's condition: %v", nc.Status.Conditions)
	}
	if got := sn.Allocatable()[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3900m")) != 0 {
		t.Errorf("allocatable after initialization %s, want the node's 3900m", got.String())
	}

	// A pod finishing or going away frees its share.
	p1.Status.Phase = corev1.PodSucceeded
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, p1)
	ExpectReconciled(f.ctx, t, f.pods, p1)
	ExpectDeleted(f.ctx, t, testEnv.Client, p2)
	// Graceful deletion leaves the pod until the kubelet confirms; force it.
	_ = testEnv.Client.Delete(f.ctx, p2, client.GracePeriodSeconds(0))
	Eventually(t, 10*time.Second, func() error {
		if err := testEnv.Client.Get(f.ctx, client.ObjectKeyFromObject(p2), &corev1.Pod{}); err == nil {
			return fmt.Errorf("p2 still exists")
		}
		return nil
	})
	ExpectReconciled(f.ctx, t, f.pods, p2)
	if got := len(f.cluster.Nodes()[0].Pods); got != 0 {
		t.Fatalf("%d pods still counted on the node", got)
	}

	usage := f.cluster.NodePoolUsage("default", nil)
	if got := usage[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("nodepool cpu usage %s, want the node capacity 4", got.String())
	}
	if got := usage["nodes"]; got.Value() != 1 {
		t.Errorf("nodepool node count %d, want 1", got.Value())
	}

	// Deleting capacity drops out of the snapshot and its pods need a new home.
	p3 := pod("p3", n.Name)
	ExpectApplied(f.ctx, t, testEnv.Client, p3)
	ExpectReconciled(f.ctx, t, f.pods, p3)
	nc.Finalizers = []string{v1.TerminationFinalizer}
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	ExpectDeleted(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	in, err := f.cluster.Snapshot(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ExistingNodes) != 0 {
		t.Errorf("capacity being deleted offered to the solver: %v", in.ExistingNodes[0].Name)
	}
	if got := f.cluster.PodsOnDeletingCapacity(); len(got) != 1 || got[0].Name != "p3" {
		t.Errorf("pods to reschedule from deleting capacity: %v", got)
	}
}

func TestDaemonSetsBecomePodTemplates(t *testing.T) {
	f := newFixture(t)
	ds := fixtures.DaemonSet("agent", fixtures.WithSelector(map[string]string{"app": "agent"}), fixtures.WithRequests("cpu", "200m"))
	ExpectApplied(f.ctx, t, testEnv.Client, ds)
	ExpectReconciled(f.ctx, t, f.daemonSets, ds)
	pods := f.cluster.DaemonSetPods()
	if len(pods) != 1 || pods[0].Namespace != "default" || pods[0].Labels["app"] != "agent" {
		t.Fatalf("daemonset pods: %+v", pods)
	}
	if got := pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("200m")) != 0 {
		t.Errorf("daemonset pod cpu %s", got.String())
	}
	ExpectDeleted(f.ctx, t, testEnv.Client, ds)
	Eventually(t, 10*time.Second, func() error {
		if err := testEnv.Client.Get(f.ctx, client.ObjectKeyFromObject(ds), &appsv1.DaemonSet{}); err == nil {
			return fmt.Errorf("daemonset still exists")
		}
		return nil
	})
	ExpectReconciled(f.ctx, t, f.daemonSets, ds)
	if got := f.cluster.DaemonSetPods(); len(got) != 0 {
		t.Fatalf("deleted daemonset still contributes: %v", got)
	}
}

func TestStaleCopyDoesNotOverwriteNewer(t *testing.T) {
	f := newFixture(t)
	nc := nodeClaim("nc-stale")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	old := nc.DeepCopy()
	nc.Status.ProviderID = "kwok://nc-stale"
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	f.cluster.UpdateNodeClaim(nc)
	f.cluster.UpdateNodeClaim(old)
	if got := f.cluster.Nodes()[0].ProviderID(); got != "kwok://nc-stale" {
		t.Fatalf("older copy overwrote the newer one: providerID %q", got)
	}
}

func TestNominationExpiresWithTheClock(t *testing.T) {
	f := newFixture(t)
	f.cluster.Nominate("nc-1")
	if !f.cluster.IsNominated("nc-1") {
		t.Fatal("not nominated right after Nominate")
	}
	f.clock.Step(state.NominationWindow + time.Second)
	if f.cluster.IsNominated("nc-1") {
		t.Fatal("nomination outlived its window")
	}
}

// A NodeClaim marked for deletion (the disruption queue created its
// replacement) is left out of snapshots like capacity being deleted, its pods
// are provisioned for, and unmarking or forgetting it ends that.
func TestMarkForDeletionHidesCapacityUntilUnmarked(t *testing.T) {
	f := newFixture(t)
	nc := nodeClaim("nc-marked")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	nc.Status.ProviderID, nc.Status.NodeName = "kwok://nc-marked", "nc-marked"
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	n := node("nc-marked", "kwok://nc-marked", map[string]string{v1.NodePoolLabelKey: "default"})
	p := pod("on-marked", "nc-marked")
	ExpectApplied(f.ctx, t, testEnv.Client, n, p)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	ExpectReconciled(f.ctx, t, f.nodes, n)
	ExpectReconciled(f.ctx, t, f.pods, p)

	existing := func() []string {
		in, err := f.cluster.Snapshot(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range in.ExistingNodes {
			out = append(out, en.Name)
		}
		return out
	}
	if got := existing(); len(got) != 1 || len(f.cluster.PodsOnDeletingCapacity()) != 0 {
		t.Fatalf("before marking: existing %v, pods to reschedule %d; want the node and none", got, len(f.cluster.PodsOnDeletingCapacity()))
	}
	gen := f.cluster.Generation()
	f.cluster.MarkForDeletion("nc-marked")
	if f.cluster.Generation() == gen {
		t.Error("marking did not change the state's generation")
	}
	if !f.cluster.Nodes()[0].MarkedForDeletion() {
		t.Fatal("marked NodeClaim's state node is not MarkedForDeletion")
	}
	if got := existing(); len(got) != 0 {
		t.Fatalf("marked capacity still in the snapshot: %v", got)
	}
	if got := f.cluster.PodsOnDeletingCapacity(); len(got) != 1 || got[0].Name != "on-marked" {
		t.Fatalf("pods on marked capacity = %v, want on-marked", got)
	}

	f.cluster.UnmarkForDeletion("nc-marked")
	if f.cluster.Nodes()[0].MarkedForDeletion() || len(existing()) != 1 {
		t.Fatal("unmarked NodeClaim still treated as going away")
	}

	// A mark ends with the NodeClaim: a new NodeClaim of the same name is not marked.
	f.cluster.MarkForDeletion("nc-marked")
	f.cluster.DeleteNodeClaim("nc-marked")
	f.cluster.DeleteNode("nc-marked")
	f.cluster.UpdateNodeClaim(nc)
	if f.cluster.Nodes()[0].MarkedForDeletion() {
		t.Fatal("mark outlived the NodeClaim it was set on")
	}
}

// The informer controllers, run by a manager, keep state in step with the API
// server without anyone calling Reconcile.
func TestManagerFedState(t *testing.T) {
	f := newFixture(t)
	mgr, err := manager.New(testEnv.Config, manager.Options{Scheme: testEnv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(f.clock, mgr.GetClient())
	for _, c := range informer.All(mgr.GetClient(), cluster) {
		if err := c.Register(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
		}}},
	}
	nc := nodeClaim("nc-mgr")
	nc.Status.Conditions = []status.Condition{}
	n := node("node-mgr", "", map[string]string{v1.NodePoolLabelKey: "default"})
	ExpectApplied(f.ctx, t, testEnv.Client, np, nc, n, pod("bound", "node-mgr"))
	Eventually(t, 30*time.Second, func() error {
		ok, err := cluster.Synced(f.ctx)
		if err != nil || !ok {
			return fmt.Errorf("not synced (%v)", err)
		}
		if len(cluster.NodePools()) != 1 {
			return fmt.Errorf("nodepool not seen")
		}
		for _, sn := range cluster.Nodes() {
			if sn.Name() == "node-mgr" && len(sn.Pods) == 1 {
				return nil
			}
		}
		return fmt.Errorf("bound pod not seen on node-mgr")
	})
}

// TestUnsyncedTimeCountsFromWhenStateWasFirstFoundOutOfSync: the gauge is 0
// while synced, grows with the cluster's clock while out of sync, and returns
// to 0 once state catches up.
func TestUnsyncedTimeCountsFromWhenStateWasFirstFoundOutOfSync(t *testing.T) {
	f := newFixture(t)
	gauge := func() (synced, unsynced float64) {
		t.Helper()
		f.cluster.ExportMetrics(f.ctx)
		return metricValue(t, "karpenter_cluster_state_synced"), metricValue(t, "karpenter_cluster_state_unsynced_time_seconds")
	}
	if s, u := gauge(); s != 1 || u != 0 {
		t.Fatalf("empty cluster: synced %v, unsynced_time %v; want 1, 0", s, u)
	}
	nc := nodeClaim("nc-unsynced")
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	if s, u := gauge(); s != 0 || u != 0 {
		t.Fatalf("just found out of sync: synced %v, unsynced_time %v; want 0, 0", s, u)
	}
	f.clock.Step(30 * time.Second)
	if s, u := gauge(); s != 0 || u != 30 {
		t.Fatalf("30 s later: synced %v, unsynced_time %v; want 0, 30", s, u)
	}
	ExpectReconciled(f.ctx, t, f.claims, nc)
	if s, u := gauge(); s != 1 || u != 0 {
		t.Fatalf("caught up: synced %v, unsynced_time %v; want 1, 0", s, u)
	}
}

// metricValue reads a gauge without labels from controller-runtime's registry.
func metricValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// reads counts the reads made through a client.Reader.
type reads struct {
	client.Reader
	n int
}

func (r *reads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.n++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *reads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.n++
	return r.Reader.List(ctx, list, opts...)
}

// TestSnapshotReadsOnlyState: namespaces and volumes reach a snapshot through
// their informer controllers, and the snapshot itself reads nothing from the
// API server (the reader handed to the cluster sees no read).
func TestSnapshotReadsOnlyState(t *testing.T) {
	f := newFixture(t)
	api := &reads{Reader: testEnv.Client}
	f.cluster = state.NewCluster(f.clock, api)
	f.namespaces = informer.NewNamespaceController(testEnv.Client, f.cluster)
	f.pvcs = informer.NewPersistentVolumeClaimController(testEnv.Client, f.cluster)
	f.pvs = informer.NewPersistentVolumeController(testEnv.Client, f.cluster)
	f.storageClasses = informer.NewStorageClassController(testEnv.Client, f.cluster)

	class := "snap-zonal"
	zonal := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-b"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "snap", Labels: map[string]string{"team": "blue"}}}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "csi.example.com",
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: zonal.Key, Values: zonal.Values}}}}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "snap-pv"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "snap"}},
		NodeAffinity:           &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{zonal}}}}},
	}}
	claim := func(name, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "snap", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: &class, VolumeName: volume,
		}}
	}
	bound, unbound := claim("data", "snap-pv"), claim("scratch", "")
	ExpectApplied(f.ctx, t, testEnv.Client, ns, sc, pv, bound, unbound)
	t.Cleanup(func() {
		for _, o := range []client.Object{bound, unbound, pv, sc} {
			ExpectFinalizersRemoved(context.Background(), t, testEnv.Client, o)
			ExpectDeleted(context.Background(), t, testEnv.Client, o)
		}
	})
	ExpectReconciled(f.ctx, t, f.namespaces, ns)
	ExpectReconciled(f.ctx, t, f.storageClasses, sc)
	ExpectReconciled(f.ctx, t, f.pvs, pv)
	ExpectReconciled(f.ctx, t, f.pvcs, bound)
	ExpectReconciled(f.ctx, t, f.pvcs, unbound)

	p := pod("db", "")
	p.Namespace = "snap"
	for _, c := range []string{"data", "scratch", "data"} {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c + "-" + fmt.Sprint(len(p.Spec.Volumes)),
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}}}}})
	in, err := f.cluster.Snapshot(f.ctx, []*corev1.Pod{p})
	if err != nil {
		t.Fatal(err)
	}
	if api.n != 0 {
		t.Fatalf("the snapshot made %d reads through the API reader", api.n)
	}
	if in.Namespaces["snap"]["team"] != "blue" {
		t.Errorf("namespace labels: %v", in.Namespaces)
	}
	if len(in.PersistentVolumeClaims) != 2 || len(in.PersistentVolumes) != 1 || in.PersistentVolumes[0].Name != "snap-pv" ||
		len(in.StorageClasses) != 1 || in.StorageClasses[0].Name != class {
		t.Fatalf("volumes: %d claims, %d volumes, %d classes; want each once: 2, 1, 1", len(in.PersistentVolumeClaims), len(in.PersistentVolumes), len(in.StorageClasses))
	}

	// Gone from the API and seen gone by the informers, gone from the snapshot.
	ExpectFinalizersRemoved(f.ctx, t, testEnv.Client, sc)
	ExpectDeleted(f.ctx, t, testEnv.Client, sc)
	ExpectReconciled(f.ctx, t, f.storageClasses, sc)
	in, _ = f.cluster.Snapshot(f.ctx, []*corev1.Pod{p})
	if len(in.StorageClasses) != 0 || len(in.PersistentVolumeClaims) != 2 || api.n != 0 {
		t.Fatalf("after deleting the class: %d classes, %d claims, %d API reads", len(in.StorageClasses), len(in.PersistentVolumeClaims), api.n)
	}
}

// TestNodeCountCountsNodesNotClaims: karpenter_cluster_state_node_count is
// the number of Node objects cluster state knows; a NodeClaim without its
// Node yet does not count, and a deleted Node stops counting.
func TestNodeCountCountsNodesNotClaims(t *testing.T) {
	f := newFixture(t)
	count := func() float64 {
		t.Helper()
		f.cluster.ExportMetrics(f.ctx)
		return metricValue(t, "karpenter_cluster_state_node_count")
	}
	if got := count(); got != 0 {
		t.Fatalf("empty cluster: node_count %v, want 0", got)
	}
	a, b := node("count-a", "fake://count-a", nil), node("count-b", "fake://count-b", nil)
	nc := nodeClaim("count-claim")
	ExpectApplied(f.ctx, t, testEnv.Client, a, b, nc)
	ExpectReconciled(f.ctx, t, f.nodes, a)
	ExpectReconciled(f.ctx, t, f.nodes, b)
	ExpectReconciled(f.ctx, t, f.claims, nc)
	if got := count(); got != 2 {
		t.Fatalf("two nodes and a claim without a node: node_count %v, want 2", got)
	}
	ExpectDeleted(f.ctx, t, testEnv.Client, a)
	ExpectReconciled(f.ctx, t, f.nodes, a)
	if got := count(); got != 1 {
		t.Fatalf("after deleting node count-a: node_count %v, want 1", got)
	}
}
