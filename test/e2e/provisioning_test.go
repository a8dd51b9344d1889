package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// 100 pending pods become NodeClaims, the NodeClaims Ready nodes (KWOK), and the
// real kube-scheduler runs every pod on them.
func TestProvisioning100PendingPods(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 16),
		kit.Deployment("default", "web", 100, "500m", "512Mi", true))
	start := time.Now()
	c := e.waitRunning(t, 100, 5*time.Minute)
	t.Logf("100 pods Running after %s on %d nodes (%v), $%.4f/h", time.Since(start).Round(100*time.Millisecond), c.Nodes, c.NodesByType, c.CostPerHour)
	ncs, nodes := e.expectNodesMatchNodeClaims(t)
	for _, nc := range ncs {
		if kit.NodeClaimState(&nc) != "Ready" {
			t.Errorf("nodeclaim %s is %s, not Ready", nc.Name, kit.NodeClaimState(&nc))
		}
		if nc.Labels[v1.NodePoolLabelKey] != "default" {
			t.Errorf("nodeclaim %s labels %v", nc.Name, nc.Labels)
		}
	}
	zones := map[string]bool{}
	for _, n := range nodes {
		zones[n.Labels[corev1.LabelTopologyZone]] = true
	}
	if len(zones) < 2 {
		t.Errorf("zone-spread pods landed in %d zone(s)", len(zones))
	}
	expectNodeAndPodMetrics(t, e, nodes, 100)
	// Nothing more is launched once every pod runs.
	e.expectNoNewNodeClaims(t, len(ncs), 15*time.Second)
}

// A NodePool whose limits are reached launches nothing more; the pods that do not
// fit stay pending with Karpenter's FailedScheduling event.
func TestProvisioningStopsAtLimits(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	np := kit.DefaultNodePool("default", "default", 8)
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("16")}
	e.apply(t, kit.DefaultNodeClass(0), np, kit.Deployment("default", "big", 30, "1", "1Gi", false))
	var last *kit.Counts
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		last = c
		return err == nil && c.Running > 0 && c.NodeClaims["Ready"] == c.NodeClaimsAll && c.Running+c.Pending == 30, err
	}); err != nil {
		t.Fatalf("provisioning under the limit did not settle: %+v", last)
	}
	e.expectNoNewNodeClaims(t, last.NodeClaimsAll, 20*time.Second)
	_, nodes := e.expectNodesMatchNodeClaims(t)
	total := resource.Quantity{}
	for _, n := range nodes {
		total.Add(n.Status.Capacity[corev1.ResourceCPU])
	}
	if total.Cmp(resource.MustParse("16")) > 0 {
		t.Fatalf("nodes have %s cpu, past the 16 cpu limit", total.String())
	}
	c := e.counts(t)
	if c.Pending == 0 {
		t.Fatalf("all 30 one-cpu pods run within a 16 cpu limit: %+v", c)
	}
	t.Logf("limit 16 cpu: %d nodes with %s cpu, %d pods running, %d pending", len(nodes), total.String(), c.Running, c.Pending)
	expectKarpenterEvent(t, e, "FailedScheduling")
}

func expectKarpenterEvent(t *testing.T, e *provisioningEnv, reason string) {
	t.Helper()
	if err := poll(e.ctx, 30*time.Second, func() (bool, error) {
		evs := &corev1.EventList{}
		if err := e.Client.List(e.ctx, evs, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason && ev.Source.Component == "karpenter" {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no %s event from karpenter", reason)
	}
}

// Of two NodePools that fit, the heavier one launches.
func TestProvisioningPrefersHeavierNodePool(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	light, heavy := kit.DefaultNodePool("light", "default", 16), kit.DefaultNodePool("heavy", "default", 16)
	light.Spec.Weight, heavy.Spec.Weight = ptr.To[int32](10), ptr.To[int32](90)
	e.apply(t, kit.DefaultNodeClass(0), light, heavy, kit.Deployment("default", "app", 10, "1", "1Gi", false))
	e.waitRunning(t, 10, 3*time.Minute)
	ncs, _ := e.expectNodesMatchNodeClaims(t)
	for _, nc := range ncs {
		if nc.Labels[v1.NodePoolLabelKey] != "heavy" {
			t.Errorf("nodeclaim %s from nodepool %q, want heavy", nc.Name, nc.Labels[v1.NodePoolLabelKey])
		}
	}
}

// A NodePool whose NodeClass is not Ready (here: it does not exist) launches
// nothing; once the NodeClass exists and is Ready, the same pods get capacity.
func TestProvisioningSkipsNodePoolWithNotReadyNodeClass(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	e.apply(t, kit.DefaultNodePool("default", "later", 16), kit.Deployment("default", "app", 5, "1", "1Gi", false))
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		return err == nil && c.Pending == 5, err
	}); err != nil {
		t.Fatal("pods never pending")
	}
	e.expectNoNewNodeClaims(t, 0, 20*time.Second)
	nc := kit.DefaultNodeClass(0)
	nc.Name = "later"
	e.apply(t, nc)
	e.waitRunning(t, 5, 3*time.Minute)
}

// Karpenter killed (SIGKILL) while instances are launching and restarted leaks no
// node and leaves no duplicate capacity: claims whose instance was lost with the
// process are garbage collected and replaced, every node has exactly one claim,
// and no node stays empty.
func TestProvisioningSurvivesKillMidLaunch(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	// Nodes appear 15s after launch: a wide window to kill the controller in.
	e.apply(t, kit.DefaultNodeClass(15*time.Second), kit.DefaultNodePool("default", "default", 8),
		kit.Deployment("default", "app", 24, "1", "1Gi", false))
	var launched []string
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		ncs := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, ncs); err != nil {
			return false, err
		}
		launched = launched[:0]
		for _, nc := range ncs.Items {
			if nc.Status.ProviderID != "" {
				launched = append(launched, nc.Name)
			}
		}
		return len(launched) > 0 && len(launched) == len(ncs.Items), nil
	}); err != nil {
		t.Fatal("no nodeclaim launched")
	}
	if c := e.counts(t); c.Nodes != 0 {
		t.Fatalf("nodes already registered (%d): the kill would not be mid-launch", c.Nodes)
	}
	e.karpenter.Kill()
	t.Logf("killed karpenter with %d nodeclaims launched and no node yet: %s", len(launched), strings.Join(launched, ", "))
	e.startKarpenter(t, karpenterBinary(t))
	c := e.waitRunning(t, 24, 6*time.Minute)
	ncs, nodes := e.expectNodesMatchNodeClaims(t)
	// No duplicate capacity: every node runs some of the pods.
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName]++
	}
	for _, n := range nodes {
		if used[n.Name] == 0 {
			t.Errorf("node %s runs none of the pods: duplicate capacity", n.Name)
		}
	}
	survivors := map[string]bool{}
	for _, nc := range ncs {
		survivors[nc.Name] = true
	}
	gone := 0
	for _, name := range launched {
		if !survivors[name] {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("none of the %d nodeclaims whose instance died with the controller was garbage collected", len(launched))
	}
	t.Logf("after restart: %d nodeclaims (%d of the %d launched before the kill were garbage collected), %d nodes, %d pods running; %s",
		len(ncs), gone, len(launched), len(nodes), c.Running, fmt.Sprint(c.NodesByType))
}

// expectNodeAndPodMetrics: the running binary exports the per-node gauges
// (allocatable cpu of every node, as its status says) and the pod latency
// metrics of the pods it provisioned for (at most one observation per pod).
func expectNodeAndPodMetrics(t *testing.T, e *provisioningEnv, nodes []corev1.Node, pods int) {
	t.Helper()
	// The node gauges are rewritten every 10 s; scrape twice a second.
	var last error
	deadline := time.Now().Add(time.Minute)
	for {
		if last = nodeAndPodMetrics(t, e, nodes, pods); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(last)
		}
		time.Sleep(500 * time.Millisecond) // between scrapes of a live process, not a wait for a fake clock
	}
}

func nodeAndPodMetrics(t *testing.T, e *provisioningEnv, nodes []corev1.Node, pods int) error {
	for _, n := range nodes {
		want := n.Status.Allocatable.Cpu().AsApproximateFloat64()
		got := scrapeCounter(t, e, "karpenter_nodes_allocatable", `node_name="`+n.Name+`"`, `resource_type="cpu"`, `nodepool="default"`)
		if got != want {
			return fmt.Errorf("karpenter_nodes_allocatable{node_name=%q,resource_type=cpu} = %v, want %v", n.Name, got, want)
		}
	}
	for _, name := range []string{"karpenter_pods_bound_duration_seconds_count", "karpenter_pods_startup_duration_seconds_count"} {
		if got := scrapeCounter(t, e, name); got < 1 || got > float64(pods) {
			return fmt.Errorf("%s = %v, want 1..%d", name, got, pods)
		}
	}
	return nil
}
