package node_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/node"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

const gi = 1 << 30
const mi = 1 << 20

type fixture struct {
	ctx     context.Context
	cancel  context.CancelFunc
	clock   *clocktesting.FakeClock
	cluster *state.Cluster
	nodes   *informer.Controller
	pods    *informer.Controller
	reg     *prometheus.Registry
	ctrl    *node.Controller
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cleanup := func() {
		c := context.Background()
		_ = testEnv.Client.DeleteAllOf(c, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		ExpectCleanedUp(c, t, testEnv.Client, &corev1.PodList{}, &appsv1.DaemonSetList{}, &corev1.NodeList{})
	}
	cleanup()
	t.Cleanup(cleanup)
	f := &fixture{ctx: ctx, cancel: cancel, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), reg: prometheus.NewRegistry()}
	f.cluster = state.NewCluster(f.clock, testEnv.Client)
	f.nodes = informer.NewNodeController(testEnv.Client, f.cluster)
	f.pods = informer.NewPodController(testEnv.Client, f.cluster)
	ctrl, err := node.NewController(f.cluster, f.clock, f.reg, kwok.WellKnownLabels...)
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	return f
}

// node creates a Node (managed when nodePool is set) with 4 cores / 16Gi
// capacity and 3800m / 15Gi allocatable, 100Gi / 90Gi ephemeral storage and
// 110 pods, and feeds it into cluster state.
func (f *fixture) node(t *testing.T, name, nodePool string) *corev1.Node {
	t.Helper()
	lbls := map[string]string{
		corev1.LabelInstanceTypeStable: "c-4x-amd64-linux", corev1.LabelTopologyZone: "test-zone-a", corev1.LabelTopologyRegion: "test-region",
		v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		kwokv1alpha1.InstanceSizeLabelKey: "4", kwokv1alpha1.InstanceFamilyLabelKey: "c",
		kwokv1alpha1.InstanceCPULabelKey: "4", kwokv1alpha1.InstanceMemoryLabelKey: "16Gi",
		corev1.LabelHostname: name,
	}
	if nodePool != "" {
		lbls[v1.NodePoolLabelKey] = nodePool
	}
	n := fixtures.Node(name, fixtures.WithLabels(lbls), fixtures.WithProviderID(kwok.ProviderIDPrefix+name),
		fixtures.WithCapacity(fixtures.ResourceList("cpu", "4", "memory", "16Gi", "ephemeral-storage", "100Gi", "pods", "110")),
		fixtures.WithAllocatable(fixtures.ResourceList("cpu", "3800m", "memory", "15Gi", "ephemeral-storage", "90Gi", "pods", "110")))
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	ExpectReconciled(f.ctx, t, f.nodes, n)
	return n
}

// pod binds a pod to the node with the given requests and limits (cpu, memory)
// and feeds it into cluster state; ds makes it a DaemonSet's pod.
func (f *fixture) pod(t *testing.T, name, nodeName string, ds *appsv1.DaemonSet, reqCPU, reqMem, limCPU, limMem string) {
	t.Helper()
	opts := []fixtures.PodOption{fixtures.OnNode(nodeName),
		fixtures.WithRequests("cpu", reqCPU, "memory", reqMem), fixtures.WithLimits("cpu", limCPU, "memory", limMem)}
	if ds != nil {
		isController := true
		opts = append(opts, fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &isController}))
	}
	p := fixtures.Pod(name, opts...)
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	ExpectReconciled(f.ctx, t, f.pods, p)
}

func (f *fixture) daemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	ds := fixtures.DaemonSet(name, fixtures.WithSelector(map[string]string{"app": name}))
	ExpectApplied(f.ctx, t, testEnv.Client, ds)
	return ds
}

// series is one gathered sample: its full label set and value.
type series struct {
	labels map[string]string
	value  float64
}

// gather returns every series of the metric, empty when it has none.
func (f *fixture) gather(t *testing.T, name string) []series {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []series
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := series{labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// nodeLabels is the exact label set (upstream's names) every series of the
// node gauges carries for a node made by fixture.node, without resource_type.
func nodeLabels(name, nodePool string) map[string]string {
	return map[string]string{
		"node_name": name, "phase": "", "managed": "true",
		"nodepool": nodePool, "zone": "test-zone-a", "region": "test-region", "instance_type": "c-4x-amd64-linux",
		"arch": "amd64", "os": "linux", "capacity_type": "on-demand", "windows_build": "",
		"instance_size": "4", "instance_family": "c", "instance_cpu": "4", "instance_memory": "16Gi",
	}
}

// with is l plus (or with a new value for) k.
func with(l map[string]string, k, v string) map[string]string {
	out := maps.Clone(l)
	out[k] = v
	return out
}

// expectSeries fails unless the metric has exactly these series (by label set),
// each with its value (to 1e-9).
func (f *fixture) expectSeries(t *testing.T, name string, want map[string]float64, labelsOf func(key string) map[string]string) {
	t.Helper()
	got := f.gather(t, name)
	gotByKey := map[string]series{}
	for _, s := range got {
		gotByKey[key(s.labels)] = s
	}
	wantKeys := map[string]string{}
	for k := range want {
		wantKeys[key(labelsOf(k))] = k
	}
	for lk, k := range wantKeys {
		s, ok := gotByKey[lk]
		if !ok {
			t.Errorf("%s: no series with labels %v; have %v", name, labelsOf(k), describeAll(got))
			continue
		}
		if math.Abs(s.value-want[k]) > 1e-9 {
			t.Errorf("%s{%s}: got %v, want %v", name, k, s.value, want[k])
		}
	}
	for lk, s := range gotByKey {
		if _, ok := wantKeys[lk]; !ok {
			t.Errorf("%s: unexpected series %v = %v", name, s.labels, s.value)
		}
	}
}

func key(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func describeAll(ss []series) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "\n  %v = %v", s.labels, s.value)
	}
	return b.String()
}

// A managed node with one DaemonSet pod and one ordinary pod: every gauge has
// the exact value under upstream's exact label set; an unmanaged node with a pod
// is reported with managed="false" and counts in utilization, as upstream.
func TestNodeGaugesHaveExactValuesAndLabels(t *testing.T) {
	f := newFixture(t)
	n := f.node(t, "managed-a", "default")
	b := f.node(t, "unmanaged-b", "")
	ds := f.daemonSet(t, "logger")
	f.pod(t, "logger-a", "managed-a", ds, "100m", "128Mi", "200m", "256Mi")
	f.pod(t, "web", "managed-a", nil, "1", "1Gi", "2", "2Gi")
	f.pod(t, "other", "unmanaged-b", nil, "3", "8Gi", "3", "8Gi")
	f.clock.SetTime(n.CreationTimestamp.Add(90 * time.Second))

	f.ctrl.Reconcile()

	managed := nodeLabels("managed-a", "default")
	unmanaged := with(nodeLabels("unmanaged-b", ""), "managed", "false")
	// Keys are "a/<resource>" for the managed node, "b/<resource>" for the other.
	byResource := func(k string) map[string]string {
		node, r, _ := strings.Cut(k, "/")
		if node == "b" {
			return with(unmanaged, "resource_type", r)
		}
		return with(managed, "resource_type", r)
	}
	f.expectSeries(t, "karpenter_nodes_allocatable", map[string]float64{
		"a/cpu": 3.8, "a/memory": 15 * gi, "a/ephemeral_storage": 90 * gi, "a/pods": 110,
		"b/cpu": 3.8, "b/memory": 15 * gi, "b/ephemeral_storage": 90 * gi, "b/pods": 110,
	}, byResource)
	f.expectSeries(t, "karpenter_nodes_system_overhead", map[string]float64{
		"a/cpu": 0.2, "a/memory": 1 * gi, "a/ephemeral_storage": 10 * gi, "a/pods": 0,
		"b/cpu": 0.2, "b/memory": 1 * gi, "b/ephemeral_storage": 10 * gi, "b/pods": 0,
	}, byResource)
	// Pod totals include the DaemonSet pod, as upstream v1.
	f.expectSeries(t, "karpenter_nodes_total_pod_requests", map[string]float64{
		"a/cpu": 1.1, "a/memory": 1*gi + 128*mi, "b/cpu": 3, "b/memory": 8 * gi,
	}, byResource)
	f.expectSeries(t, "karpenter_nodes_total_pod_limits", map[string]float64{
		"a/cpu": 2.2, "a/memory": 2*gi + 256*mi, "b/cpu": 3, "b/memory": 8 * gi,
	}, byResource)
	f.expectSeries(t, "karpenter_nodes_total_daemon_requests", map[string]float64{"a/cpu": 0.1, "a/memory": 128 * mi}, byResource)
	f.expectSeries(t, "karpenter_nodes_total_daemon_limits", map[string]float64{"a/cpu": 0.2, "a/memory": 256 * mi}, byResource)
	// b may have been created a second after a (timestamps have whole seconds).
	bLifetime := f.clock.Now().Sub(b.CreationTimestamp.Time).Seconds()
	f.expectSeries(t, "karpenter_nodes_current_lifetime_seconds", map[string]float64{"a": 90, "b": bLifetime}, func(k string) map[string]string {
		if k == "b" {
			return unmanaged
		}
		return managed
	})
	// Utilization counts both nodes.
	f.expectSeries(t, "karpenter_cluster_utilization_percent", map[string]float64{
		"cpu": 100 * 4.1 / 7.6, "memory": 100 * float64(9*gi+128*mi) / (30 * gi), "ephemeral_storage": 0, "pods": 0,
	}, func(r string) map[string]string { return map[string]string{"resource_type": r} })
}

// Deleting a node removes all of its series at the next pass; the other node's
// stay and utilization is recomputed from what remains.
func TestDeletedNodeSeriesDisappear(t *testing.T) {
	f := newFixture(t)
	a := f.node(t, "node-a", "default")
	f.node(t, "node-b", "spot")
	f.pod(t, "web-a", "node-a", nil, "1900m", "5Gi", "2", "6Gi")
	f.pod(t, "web-b", "node-b", nil, "380m", "3Gi", "1", "4Gi")
	f.ctrl.Reconcile()
	for _, name := range []string{"node-a", "node-b"} {
		if len(f.seriesOf(t, name)) == 0 {
			t.Fatalf("no series for %s before deletion", name)
		}
	}
	f.expectSeries(t, "karpenter_cluster_utilization_percent", map[string]float64{
		"cpu": 100 * 2.28 / 7.6, "memory": 100 * 8.0 / 30, "ephemeral_storage": 0, "pods": 0,
	}, func(r string) map[string]string { return map[string]string{"resource_type": r} })

	ExpectDeleted(f.ctx, t, testEnv.Client, a)
	ExpectNotFound(f.ctx, t, testEnv.Client, a)
	ExpectReconciled(f.ctx, t, f.nodes, a)
	f.ctrl.Reconcile()

	if s := f.seriesOf(t, "node-a"); len(s) != 0 {
		t.Errorf("deleted node-a still has %d series:%s", len(s), describeAll(s))
	}
	// node-b: 4 resources in each of the 6 resource gauges (requests and limits
	// only cpu and memory) plus lifetime.
	if got, want := len(f.seriesOf(t, "node-b")), 4+4+2+2+0+0+1; got != want {
		t.Errorf("node-b has %d series, want %d:%s", got, want, describeAll(f.seriesOf(t, "node-b")))
	}
	f.expectSeries(t, "karpenter_cluster_utilization_percent", map[string]float64{
		"cpu": 10, "memory": 20, "ephemeral_storage": 0, "pods": 0,
	}, func(r string) map[string]string { return map[string]string{"resource_type": r} })
}

// seriesOf returns every node-gauge series labelled with the node.
func (f *fixture) seriesOf(t *testing.T, nodeName string) []series {
	t.Helper()
	var out []series
	for _, m := range []string{"allocatable", "system_overhead", "total_pod_requests", "total_pod_limits", "total_daemon_requests", "total_daemon_limits", "current_lifetime_seconds"} {
		for _, s := range f.gather(t, "karpenter_nodes_"+m) {
			if s.labels["node_name"] == nodeName {
				out = append(out, s)
			}
		}
	}
	return out
}

// Start passes at once and then every 10 s on its clock: a pod bound after the
// first pass shows up only once the clock moves 10 s, and the node's lifetime
// moves with the clock.
func TestStartRefreshesEveryPollPeriod(t *testing.T) {
	f := newFixture(t)
	n := f.node(t, "node-a", "default")
	f.clock.SetTime(n.CreationTimestamp.Add(time.Minute))
	done := make(chan struct{})
	go func() { defer close(done); _ = f.ctrl.Start(f.ctx) }()

	podRequestsCPU := func() (float64, bool) {
		for _, s := range f.gather(t, "karpenter_nodes_total_pod_requests") {
			if s.labels["node_name"] == "node-a" && s.labels["resource_type"] == "cpu" {
				return s.value, true
			}
		}
		return 0, false
	}
	Eventually(t, 10*time.Second, func() error {
		if !f.clock.HasWaiters() {
			return fmt.Errorf("first pass not finished")
		}
		return nil
	})
	if v, ok := podRequestsCPU(); ok {
		t.Fatalf("pod requests before any pod: %v", v)
	}
	f.expectSeries(t, "karpenter_nodes_current_lifetime_seconds", map[string]float64{"": 60}, func(string) map[string]string { return nodeLabels("node-a", "default") })

	f.pod(t, "web", "node-a", nil, "1500m", "1Gi", "2", "2Gi")
	f.clock.Step(9 * time.Second)
	if v, ok := podRequestsCPU(); ok {
		t.Fatalf("a pass ran before 10 s: cpu requests %v", v)
	}
	f.clock.Step(time.Second)
	Eventually(t, 10*time.Second, func() error {
		if v, ok := podRequestsCPU(); !ok || v != 1.5 {
			return fmt.Errorf("cpu requests %v (present %v), want 1.5", v, ok)
		}
		return nil
	})
	Eventually(t, 10*time.Second, func() error {
		for _, s := range f.gather(t, "karpenter_nodes_current_lifetime_seconds") {
			if s.labels["node_name"] == "node-a" && s.value == 70 {
				return nil
			}
		}
		return fmt.Errorf("lifetime not 70 s")
	})
	f.cancelAndWait(t, done)
}

func (f *fixture) cancelAndWait(t *testing.T, done <-chan struct{}) {
	t.Helper()
	f.cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context ended")
	}
}

// A pass over nodes whose Node and bound pods did not change since the last
// one keeps their resource series (the memo re-marks them, or the sweep would
// delete them) while the lifetime moves on; a pod bound since is counted at the
// next pass, and the untouched node's values stay exact.
func TestUnchangedNodesKeepSeriesAndChangesShow(t *testing.T) {
	f := newFixture(t)
	a := f.node(t, "node-a", "default")
	f.node(t, "node-b", "default")
	f.pod(t, "web-a", "node-a", nil, "1", "1Gi", "2", "2Gi")
	f.pod(t, "web-b", "node-b", nil, "500m", "1Gi", "1", "2Gi")
	f.clock.SetTime(a.CreationTimestamp.Add(10 * time.Second))
	f.ctrl.Reconcile()
	before := map[string]int{"node-a": len(f.seriesOf(t, "node-a")), "node-b": len(f.seriesOf(t, "node-b"))}

	f.clock.SetTime(a.CreationTimestamp.Add(20 * time.Second))
	f.ctrl.Reconcile()
	for name, n := range before {
		if got := len(f.seriesOf(t, name)); got != n || n == 0 {
			t.Errorf("%s: %d series after an unchanged pass, want %d (and more than none)", name, got, n)
		}
	}
	requests := func(n string) map[string]string {
		node, r, _ := strings.Cut(n, "/")
		return with(nodeLabels(node, "default"), "resource_type", r)
	}
	f.expectSeries(t, "karpenter_nodes_total_pod_requests", map[string]float64{
		"node-a/cpu": 1, "node-a/memory": 1 * gi, "node-b/cpu": 0.5, "node-b/memory": 1 * gi,
	}, requests)
	for _, s := range f.gather(t, "karpenter_nodes_current_lifetime_seconds") {
		if s.labels["node_name"] == "node-a" && s.value != 20 {
			t.Errorf("node-a lifetime %v after the second pass, want 20", s.value)
		}
	}

	f.pod(t, "api-a", "node-a", nil, "2", "3Gi", "2", "3Gi")
	f.ctrl.Reconcile()
	f.expectSeries(t, "karpenter_nodes_total_pod_requests", map[string]float64{
		"node-a/cpu": 3, "node-a/memory": 4 * gi, "node-b/cpu": 0.5, "node-b/memory": 1 * gi,
	}, requests)
}
