package top

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func testNode(name, pool string, created time.Time) *corev1.Node {
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: "c-4x-amd64-linux", v1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "test-zone-a",
		"eks-node-viewer/instance-price": "0.25",
	}
	if pool != "" {
		labels[v1.NodePoolLabelKey] = pool
	}
	return fixtures.Node(name, fixtures.CreatedAt(created), fixtures.WithLabels(labels), fixtures.WithProviderID("kwok://"+name),
		fixtures.WithAllocatable(fixtures.ResourceList("cpu", "4", "memory", "16Gi")),
		fixtures.WithNodeConditions(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}))
}

func testPod(name, node, cpu, mem string) *corev1.Pod {
	return fixtures.Pod(name, fixtures.OnNode(node), fixtures.WithRequests("cpu", cpu, "memory", mem), fixtures.WithPhase(corev1.PodRunning))
}

func labelPrice(n *corev1.Node) (float64, bool) {
	var p float64
	_, err := fmt.Sscan(n.Labels["eks-node-viewer/instance-price"], &p)
	return p, err == nil
}

func TestModelSumsPodsPerNodeAndGroupsByPool(t *testing.T) {
	m := NewModel(labelPrice)
	m.UpsertNodePool(&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100")}}})
	m.UpsertNodePool(&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "empty"}})
	m.UpsertNode(testNode("b", "default", now.Add(-time.Hour)))
	m.UpsertNode(testNode("a", "default", now.Add(-time.Minute)))
	m.UpsertNode(testNode("x", "", now))
	m.UpsertNode(testNode("g", "gone", now))
	m.UpsertPod(testPod("p1", "a", "1", "1Gi"))
	m.UpsertPod(testPod("p2", "a", "500m", "512Mi"))
	m.UpsertPod(testPod("p3", "", "1", "1Gi"))
	done := testPod("p4", "a", "3", "1Gi")
	done.Status.Phase = corev1.PodSucceeded
	m.UpsertPod(done)

	f := m.Frame(now)
	var names []string
	for _, p := range f.Pools {
		names = append(names, fmt.Sprintf("%s(%d)", p.Name, len(p.Nodes)))
	}
	if got := strings.Join(names, " "); got != "default(2) empty(0) gone(1) (1)" {
		t.Fatalf("pools %q", got)
	}
	if !f.Pools[2].Gone || !f.Pools[3].Unmanaged || f.Pools[0].CPULimit != 100_000 {
		t.Fatalf("pool flags: %+v", f.Pools)
	}
	def := f.Pools[0]
	if def.Nodes[0].Name != "b" || def.Nodes[1].Name != "a" {
		t.Fatalf("nodes not oldest first: %+v", def.Nodes)
	}
	a := def.Nodes[1]
	if a.CPUReq != 1500 || a.MemReq != 1536<<20 || a.Pods != 2 || a.CPUAlloc != 4000 || !a.PriceKnown || a.Price != 0.25 {
		t.Fatalf("node a: %+v", a)
	}
	if f.PendingPods != 1 {
		t.Fatalf("pending %d, want 1", f.PendingPods)
	}

	// The pod moves off, one is deleted, the pending pod binds.
	m.UpsertPod(testPod("p1", "b", "1", "1Gi"))
	m.DeletePod("default/p2")
	m.UpsertPod(testPod("p3", "b", "1", "1Gi"))
	f = m.Frame(now)
	a, b := f.Pools[0].Nodes[1], f.Pools[0].Nodes[0]
	if a.CPUReq != 0 || a.Pods != 0 || b.CPUReq != 2000 || b.Pods != 2 || f.PendingPods != 0 {
		t.Fatalf("after moves: a %+v b %+v pending %d", a, b, f.PendingPods)
	}
	if tot := f.Totals(); tot.Nodes != 4 || tot.CPUReq != 2000 || tot.Price != 1 || tot.Unpriced != 0 {
		t.Fatalf("totals %+v", tot)
	}
}

func TestModelNodeStates(t *testing.T) {
	m := NewModel(nil)
	cordoned := testNode("cordoned", "p", now)
	cordoned.Spec.Unschedulable = true
	disrupting := testNode("disrupting", "p", now)
	disrupting.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
	deleting := testNode("deleting", "p", now)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	notReady := testNode("notready", "p", now)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, n := range []*corev1.Node{cordoned, disrupting, deleting, notReady, testNode("ready", "p", now)} {
		m.UpsertNode(n)
	}
	got := map[string]string{}
	for _, n := range m.Frame(now).Pools[0].Nodes {
		got[n.Name] = n.State
		if n.PriceKnown {
			t.Errorf("%s priced without a price function", n.Name)
		}
	}
	want := map[string]string{"cordoned": "Cordoned", "disrupting": "Disrupting", "deleting": "Deleting", "notready": "NotReady", "ready": "Ready"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", got, want)
	}
}

// A NodeClaim has a row of its own until its Node exists (matched by node
// name or provider ID), then only the Node is shown.
func TestModelNodeClaimRowsUntilTheNodeRegisters(t *testing.T) {
	m := NewModel(labelPrice)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc", CreationTimestamp: metav1.NewTime(now), Labels: map[string]string{
		v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: "c-4x-amd64-linux", "eks-node-viewer/instance-price": "0.5",
	}}}
	m.UpsertNodeClaim(nc)
	rows := m.Frame(now).Pools[0].Nodes
	if len(rows) != 1 || rows[0].State != "Launching" || rows[0].Price != 0.5 {
		t.Fatalf("launching claim: %+v", rows)
	}
	nc.Status.ProviderID = "kwok://node-1"
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m")}
	m.UpsertNodeClaim(nc)
	if rows = m.Frame(now).Pools[0].Nodes; rows[0].State != "Registering" || rows[0].CPUAlloc != 3800 {
		t.Fatalf("launched claim: %+v", rows)
	}
	m.UpsertNode(testNode("node-1", "default", now))
	if rows = m.Frame(now).Pools[0].Nodes; len(rows) != 1 || rows[0].Name != "node-1" {
		t.Fatalf("claim and its node (by provider ID): %+v", rows)
	}
	m.DeleteNode("node-1")
	if rows = m.Frame(now).Pools[0].Nodes; len(rows) != 1 || rows[0].Name != "default-abc" {
		t.Fatalf("claim whose node is gone: %+v", rows)
	}
	m.DeleteNodeClaim("default-abc")
	if f := m.Frame(now); len(f.Pools) != 0 {
		t.Fatalf("after deleting everything: %+v", f.Pools)
	}
}

func TestTransformsKeepWhatTheModelReads(t *testing.T) {
	p := testPod("p", "n", "250m", "1Gi")
	p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	o, _ := slimPod(p)
	sp := o.(*corev1.Pod)
	if sp.Spec.Volumes != nil || sp.ManagedFields != nil || sp.Spec.NodeName != "n" {
		t.Fatalf("slim pod kept too much or too little: %+v", sp)
	}
	m := NewModel(nil)
	m.UpsertNode(testNode("n", "p", now))
	m.UpsertPod(sp)
	if got := m.Frame(now).Pools[0].Nodes[0].CPUReq; got != 350 {
		t.Fatalf("requests from the slim pod (container + sidecar): %d, want 350", got)
	}
	n := testNode("n", "p", now)
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"big"}}}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
	o, _ = slimNode(n)
	sn := o.(*corev1.Node)
	if sn.Status.Images != nil || len(sn.Status.Conditions) != 1 || sn.Labels[v1.NodePoolLabelKey] != "p" || sn.Spec.ProviderID == "" {
		t.Fatalf("slim node: %+v", sn)
	}
}

// The slim pod keeps the pod-level requests and, for a pod resized in place, what its status
// holds: top's requests are the pod-level cpu, or the larger allocation while a resize is pending.
func TestSlimPodKeepsPodLevelAndResizedRequests(t *testing.T) {
	cpuReq := func(p *corev1.Pod) int64 {
		t.Helper()
		o, _ := slimPod(p)
		m := NewModel(nil)
		m.UpsertNode(testNode("n", "p", now))
		m.UpsertPod(o.(*corev1.Pod))
		return m.Frame(now).Pools[0].Nodes[0].CPUReq
	}
	p := testPod("p", "n", "250m", "1Gi")
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	if got := cpuReq(p); got != 2000 {
		t.Fatalf("pod-level requests: %dm cpu, want 2000m", got)
	}
	p = testPod("p", "n", "250m", "1Gi")
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: "x", Ready: true,
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}}
	if got := cpuReq(p); got != 1000 {
		t.Fatalf("resized pod: %dm cpu, want the 1000m still allocated", got)
	}
}

// BenchmarkRedraw200Nodes: one redraw of a 200-node, 4,000-pod fleet, as the
// live view does it: a pod event applied to the model, the frame taken from
// the model, and rendered for a 160x50 terminal.
func BenchmarkRedraw200Nodes(b *testing.B) {
	m := NewModel(labelPrice)
	for p := 0; p < 4; p++ {
		m.UpsertNodePool(&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%d", p)}})
	}
	for i := 0; i < 200; i++ {
		m.UpsertNode(testNode(fmt.Sprintf("node-%03d", i), fmt.Sprintf("pool-%d", i%4), now.Add(-time.Duration(i)*time.Minute)))
		for j := 0; j < 20; j++ {
			m.UpsertPod(testPod(fmt.Sprintf("pod-%d-%d", i, j), fmt.Sprintf("node-%03d", i), "100m", "256Mi"))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m.UpsertPod(testPod(fmt.Sprintf("pod-%d-0", i%200), fmt.Sprintf("node-%03d", (i+1)%200), "100m", "256Mi"))
		lines := Render(m.Frame(now), Options{Width: 160, Height: 50, Live: true})
		if len(lines) != 50 {
			b.Fatalf("%d lines", len(lines))
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/frame")
}
