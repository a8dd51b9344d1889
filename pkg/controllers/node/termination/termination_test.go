package termination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/instance"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination/eviction"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// Pods leave in four tiers, each only once the previous one is gone; pods
// that tolerate the disrupted taint, mirror pods and finished pods are left
// alone and do not hold the node. The instance is deleted after the drain and
// the finalizer removed after the instance is gone; metrics count it all.
func TestDrainEvictsTiersInOrder(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "tiers", 0)
	// Karpenter chose to disrupt this node; its pods are drained for that reason.
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeDisruptionReason, "Drifted", "the NodePool template changed")
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)

	web := f.pod(t, "web", node)
	logs := f.pod(t, "logs", node, daemon)
	dns := f.pod(t, "dns", node, critical)
	cni := f.pod(t, "cni", node, critical, daemon)
	untouched := []*corev1.Pod{
		f.pod(t, "tolerates", node, tolerating),
		f.pod(t, "static", node, mirror(node)),
		f.pod(t, "job", node, succeeded),
	}

	before := struct{ drainedPods, evicted, drainedNodes, terminatedNodes float64 }{
		testutil.ToFloat64(eviction.PodsDrainedTotal.WithLabelValues("Drifted")),
		testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("200")),
		testutil.ToFloat64(termination.NodesDrainedTotal.WithLabelValues("default")),
		testutil.ToFloat64(metrics.NodesTerminatedTotal.WithLabelValues("default", node.Labels[corev1.LabelTopologyZone])),
	}
	durations := summaryCount(t, termination.TerminationDuration.WithLabelValues("default").(prometheus.Metric))
	lifetimes := histogramCount(t, termination.LifetimeDuration.WithLabelValues("default").(prometheus.Metric))

	ExpectDeleted(f.ctx, t, e.Client, node) // kubectl delete node
	tiers := [][]*corev1.Pod{{web}, {logs}, {dns}, {cni}}
	for i, tier := range tiers {
		f.pass(t, node)
		for _, p := range tier {
			if !gone(f.ctx, t, p) {
				t.Fatalf("pass %d: %s/%s not evicted", i+1, p.Namespace, p.Name)
			}
		}
		for _, later := range tiers[i+1:] {
			for _, p := range later {
				if terminating(f.ctx, t, p) {
					t.Fatalf("pass %d: %s/%s evicted before its tier", i+1, p.Namespace, p.Name)
				}
			}
		}
		if i == 0 {
			got := ExpectExists(f.ctx, t, e.Client, node.DeepCopy())
			if !hasTaint(got, v1.DisruptedNoScheduleTaint) || got.Labels[corev1.LabelNodeExcludeBalancers] != "karpenter" {
				t.Fatalf("draining node not tainted/labelled: %v %v", got.Spec.Taints, got.Labels)
			}
			if ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()).DeletionTimestamp.IsZero() {
				t.Fatal("NodeClaim not deleted with its node")
			}
			if c := condition(f.ctx, t, nc, v1.ConditionTypeDrained); !c.IsUnknown() || c.Reason != "Draining" || !strings.Contains(c.Message, "waiting to be evicted") {
				t.Fatalf("Drained while draining: %+v", c)
			}
			if f.cp.deleted(nc.Status.ProviderID) != 0 {
				t.Fatal("instance deleted before the node was drained")
			}
		}
	}
	// Drained: the same pass deletes the instance and releases the node.
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	for _, p := range untouched {
		if terminating(f.ctx, t, p) {
			t.Fatalf("%s/%s should not have been evicted", p.Namespace, p.Name)
		}
	}
	if f.cp.deleted(nc.Status.ProviderID) == 0 || f.instanceListed(t, nc.Status.ProviderID) {
		t.Fatal("node released without its instance being terminated")
	}
	for _, typ := range []string{v1.ConditionTypeDrained, v1.ConditionTypeVolumesDetached, v1.ConditionTypeInstanceTerminating} {
		if c := condition(f.ctx, t, nc, typ); !c.IsTrue() {
			t.Fatalf("%s: %+v", typ, c)
		}
	}
	if got := testutil.ToFloat64(eviction.PodsDrainedTotal.WithLabelValues("Drifted")); got != before.drainedPods+4 {
		t.Fatalf("karpenter_pods_drained_total{reason=Drifted}: %v -> %v", before.drainedPods, got)
	}
	if got := testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("200")); got != before.evicted+4 {
		t.Fatalf("karpenter_pods_eviction_requests_total{code=200}: %v -> %v", before.evicted, got)
	}
	if got := testutil.ToFloat64(termination.NodesDrainedTotal.WithLabelValues("default")); got != before.drainedNodes+1 {
		t.Fatalf("karpenter_nodes_drained_total: %v -> %v", before.drainedNodes, got)
	}
	if got := testutil.ToFloat64(metrics.NodesTerminatedTotal.WithLabelValues("default", node.Labels[corev1.LabelTopologyZone])); got != before.terminatedNodes+1 {
		t.Fatalf("karpenter_nodes_terminated_total: %v -> %v", before.terminatedNodes, got)
	}
	if got := summaryCount(t, termination.TerminationDuration.WithLabelValues("default").(prometheus.Metric)); got != durations+1 {
		t.Fatalf("karpenter_nodes_termination_duration_seconds count: %v -> %v", durations, got)
	}
	if got := histogramCount(t, termination.LifetimeDuration.WithLabelValues("default").(prometheus.Metric)); got != lifetimes+1 {
		t.Fatalf("karpenter_nodes_lifetime_duration_seconds count: %v -> %v", lifetimes, got)
	}
	if evs := f.events(); !hasEvent(evs, "Normal Evicted") {
		t.Fatalf("no Evicted event: %v", evs)
	}
	// The NodeClaim follows once its node is gone.
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
}

// A PDB that allows no disruption keeps its pods on the node (429, retried
// with backoff on the clock, reported on the Node and the NodeClaim) and the
// instance alive; once it allows one disruption at a time, the pods go one by
// one and only then is the instance deleted.
func TestPDBBlocksEvictionUntilItAllows(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "pdb", 0)
	a := f.pod(t, "web-a", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	b := f.pod(t, "web-b", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	pdb := f.pdb(t, "web", "web", 0)
	refused := func() float64 { return testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("429")) }
	refusedBefore := refused()
	forceful := testutil.ToFloat64(eviction.PodsDrainedTotal.WithLabelValues(eviction.ReasonForceful))

	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	if terminating(f.ctx, t, a) || terminating(f.ctx, t, b) {
		t.Fatal("a PDB allowing no disruption was violated")
	}
	if got := refused(); got != refusedBefore+2 {
		t.Fatalf("expected 2 refused evictions, got %v", got-refusedBefore)
	}
	if evs := f.events(); !hasEvent(evs, "Warning FailedDraining", "default/web-a", "PodDisruptionBudget", "The disruption budget web needs") {
		t.Fatalf("no FailedDraining event naming the PDB: %v", evs)
	}

	// Backoff: nothing is retried until 100ms have passed on the clock.
	f.pass(t, node)
	if got := refused(); got != refusedBefore+2 {
		t.Fatalf("retried before the backoff elapsed: %v refusals", got-refusedBefore)
	}
	if c := condition(f.ctx, t, nc, v1.ConditionTypeDrained); !c.IsUnknown() || !strings.Contains(c.Message, "violates a PodDisruptionBudget") {
		t.Fatalf("Drained should say what blocks the drain: %+v", c)
	}
	f.clk.Step(eviction.BaseDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if got := refused(); got != refusedBefore+4 {
		t.Fatalf("expected a retry of each pod after %v: %v refusals", eviction.BaseDelay, got-refusedBefore)
	}
	// The second retry waits twice as long.
	f.clk.Step(eviction.BaseDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if got := refused(); got != refusedBefore+4 {
		t.Fatalf("retried before the doubled backoff: %v refusals", got-refusedBefore)
	}
	if f.cp.deleted(nc.Status.ProviderID) != 0 || gone(f.ctx, t, node) {
		t.Fatal("instance deleted while pods were still on the node")
	}

	// One disruption allowed: exactly one pod goes (the API server spends
	// the budget), the other is refused again.
	f.allow(t, pdb, 1)
	f.clk.Step(eviction.MaxDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if n := btoi(gone(f.ctx, t, a)) + btoi(gone(f.ctx, t, b)); n != 1 {
		t.Fatalf("%d pods evicted with one disruption allowed", n)
	}
	f.allow(t, pdb, 1)
	f.clk.Step(eviction.MaxDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if !gone(f.ctx, t, a) || !gone(f.ctx, t, b) {
		t.Fatal("second pod not evicted once the PDB allowed it")
	}
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	if f.instanceListed(t, nc.Status.ProviderID) {
		t.Fatal("instance leaked")
	}
	if got := testutil.ToFloat64(eviction.PodsDrainedTotal.WithLabelValues(eviction.ReasonForceful)); got != forceful+2 {
		t.Fatalf("karpenter_pods_drained_total{reason=%q}: %v -> %v", eviction.ReasonForceful, forceful, got)
	}
}

// Two PDBs over one pod: the Eviction API answers 500, which is retried like
// a PDB refusal and explained, until one PDB goes.
func TestPodUnderTwoPDBsIsRetried(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "two-pdbs", 0)
	p := f.pod(t, "web", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	f.pdb(t, "web-1", "web", 1)
	second := f.pdb(t, "web-2", "web", 1)
	failed := testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("500"))

	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	if terminating(f.ctx, t, p) {
		t.Fatal("pod under two PDBs evicted")
	}
	if got := testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("500")); got != failed+1 {
		t.Fatalf("karpenter_pods_eviction_requests_total{code=500}: %v -> %v", failed, got)
	}
	if evs := f.events(); !hasEvent(evs, "FailedDraining", "more than one PodDisruptionBudget") {
		t.Fatalf("no event explaining the two PDBs: %v", evs)
	}
	ExpectDeleted(f.ctx, t, e.Client, second)
	f.clk.Step(eviction.BaseDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if !gone(f.ctx, t, p) {
		t.Fatal("pod not evicted once a single PDB selected it")
	}
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
}

// kubectl delete nodeclaim with a terminationGracePeriod: the NodeClaim gets
// its deadline, its node drains, a do-not-disrupt pod is never evicted and
// holds the node until the deadline, when it is deleted; then everything goes.
func TestDoNotDisruptPodWaitsForTheDeadline(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "dnd", 10*time.Minute)
	keep := f.pod(t, "precious", node, withAnnotation(v1.DoNotDisruptAnnotationKey, "true"))
	web := f.pod(t, "web", node)

	ExpectDeleted(f.ctx, t, e.Client, nc) // kubectl delete nodeclaim
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	want := nc.DeletionTimestamp.Add(10 * time.Minute).UTC().Format(time.RFC3339)
	if got := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Fatalf("termination timestamp %q, want %q", got, want)
	}
	if ExpectExists(f.ctx, t, e.Client, node).DeletionTimestamp.IsZero() {
		t.Fatal("node not deleted with its NodeClaim")
	}

	f.pass(t, node)
	if !gone(f.ctx, t, web) {
		t.Fatal("plain pod not evicted")
	}
	for _, step := range []time.Duration{time.Minute, 8 * time.Minute} {
		f.clk.Step(step)
		f.pass(t, node)
		if terminating(f.ctx, t, keep) {
			t.Fatal("do-not-disrupt pod deleted before the deadline")
		}
	}
	if c := condition(f.ctx, t, nc, v1.ConditionTypeDrained); !strings.Contains(c.Message, "default/precious (has karpenter.sh/do-not-disrupt, deleted at "+want) {
		t.Fatalf("Drained should name the do-not-disrupt pod and the deadline: %+v", c)
	}
	if evs := f.events(); !hasEvent(evs, "Warning TerminationGracePeriodExpiring", "All pods will be deleted by "+want) {
		t.Fatalf("no TerminationGracePeriodExpiring event: %v", evs)
	}
	f.clk.Step(time.Minute + 10*time.Second) // past the deadline
	f.pass(t, node)
	if !terminating(f.ctx, t, keep) {
		t.Fatal("do-not-disrupt pod not deleted at the deadline")
	}
	if evs := f.events(); !hasEvent(evs, "Normal Disrupted", "bypasses the PDB of the pod and the do-not-disrupt annotation") {
		t.Fatalf("no Disrupted event: %v", evs)
	}
	f.kubelet(t)
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if f.instanceListed(t, nc.Status.ProviderID) {
		t.Fatal("instance leaked")
	}
}

// Without a terminationGracePeriod a do-not-disrupt pod holds the node for
// as long as it keeps the annotation.
func TestDoNotDisruptPodWithoutDeadlineHoldsTheNode(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "dnd-forever", 0)
	keep := f.pod(t, "precious", node, withAnnotation(v1.DoNotDisruptAnnotationKey, "true"))
	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	f.clk.Step(24 * time.Hour)
	f.pass(t, node)
	if terminating(f.ctx, t, keep) || gone(f.ctx, t, node) {
		t.Fatal("do-not-disrupt pod evicted without a terminationGracePeriod")
	}
	if c := condition(f.ctx, t, nc, v1.ConditionTypeDrained); !strings.Contains(c.Message, "NodeClaim has no terminationGracePeriod") {
		t.Fatalf("Drained: %+v", c)
	}
	// The owner lifts the annotation: the pod is evicted like any other.
	keep = ExpectExists(f.ctx, t, e.Client, keep)
	keep.Annotations = nil
	if err := e.Client.Update(f.ctx, keep); err != nil {
		t.Fatal(err)
	}
	f.pass(t, node)
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, keep, node)
}

// A PDB that never allows a disruption holds a pod until the deadline, and the
// pod is deleted early enough that its own terminationGracePeriodSeconds ends
// by the deadline.
func TestDeadlineDeletesPDBBlockedPodsEarlyEnough(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "deadline", 5*time.Minute)
	slow := f.pod(t, "web", node, fixtures.WithLabels(map[string]string{"app": "web"}), fixtures.WithTerminationGracePeriodSeconds(120))
	f.pdb(t, "web", "web", 0)
	ExpectDeleted(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	deadline, err := time.Parse(time.RFC3339, nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	if err != nil {
		t.Fatal(err)
	}
	f.pass(t, node)
	f.clk.SetTime(deadline.Add(-3 * time.Minute))
	f.pass(t, node)
	if terminating(f.ctx, t, slow) {
		t.Fatal("PDB-blocked pod deleted long before the deadline")
	}
	f.clk.SetTime(deadline.Add(-110 * time.Second))
	f.pass(t, node)
	got := ExpectExists(f.ctx, t, e.Client, slow.DeepCopy())
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil {
		t.Fatal("pod not deleted once its grace period would reach past the deadline")
	}
	if g := *got.DeletionGracePeriodSeconds; g < 100 || g > 110 {
		t.Fatalf("grace period %ds, want the 110s left before the deadline", g)
	}
	if f.ctrl.Queue.Has(slow) {
		t.Fatal("a pod deleted at the deadline is still queued for eviction")
	}
	f.kubelet(t)
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
}

// A node that is not Ready and whose instance is gone has nothing to drain:
// its finalizer goes at once and its pods are left to the pod garbage
// collector.
func TestNotReadyNodeWithoutInstanceIsReleasedAtOnce(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "dead", 0)
	p := f.pod(t, "web", node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	ExpectDeleted(f.ctx, t, e.Client, node) // the KWOK instance is the Node: gone once deleted
	ExpectReconciled(f.ctx, t, f.ctrl, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	if terminating(f.ctx, t, p) {
		t.Fatal("pod of a dead node evicted")
	}
}

// The finalizer stays while the cloud provider still reports the instance
// shutting down; InstanceTerminating says so.
func TestFinalizerStaysUntilTheInstanceIsGone(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "slow-instance", 0)
	f.cp.slowCycles = 2
	ExpectDeleted(f.ctx, t, e.Client, node)
	for i := 0; i < 2; i++ {
		res := f.pass(t, node)
		if res.RequeueAfter != instance.Poll {
			t.Fatalf("pass %d: requeue %v, want %v", i+1, res.RequeueAfter, instance.Poll)
		}
		if got := ExpectExists(f.ctx, t, e.Client, node.DeepCopy()); len(got.Finalizers) == 0 {
			t.Fatal("finalizer removed while the instance was terminating")
		}
		if c := condition(f.ctx, t, nc, v1.ConditionTypeInstanceTerminating); !c.IsTrue() {
			t.Fatalf("InstanceTerminating: %+v", c)
		}
	}
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	if n := f.cp.deleted(nc.Status.ProviderID); n != 3 {
		t.Fatalf("%d Delete calls, want 3", n)
	}
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
}

// Volume attachments are waited for after the drain (except those of pods
// that stay on the node), then the instance goes.
func TestVolumeAttachmentsAreWaitedFor(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "volumes", 0)
	moving := attachment(t, f, "va-moving", node, "pv-moving")
	attachment(t, f, "va-staying", node, "pv-staying")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeName:  "pv-staying",
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	ExpectApplied(f.ctx, t, e.Client, pvc)
	t.Cleanup(func() { ExpectDeleted(f.ctx, t, e.Client, pvc) })
	f.pod(t, "agent", node, tolerating, fixtures.WithPVC("data"))

	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	if c := condition(f.ctx, t, nc, v1.ConditionTypeDrained); !c.IsTrue() {
		t.Fatalf("Drained: %+v", c)
	}
	if c := condition(f.ctx, t, nc, v1.ConditionTypeVolumesDetached); !c.IsUnknown() || c.Reason != termination.ReasonAwaitingVolumeDetachment || !strings.Contains(c.Message, "1 VolumeAttachments") {
		t.Fatalf("VolumesDetached: %+v", c)
	}
	if f.cp.deleted(nc.Status.ProviderID) != 0 || gone(f.ctx, t, node) {
		t.Fatal("instance deleted with a volume still attached")
	}
	ExpectDeleted(f.ctx, t, e.Client, moving) // the attach/detach controller detached it
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	if c := condition(f.ctx, t, nc, v1.ConditionTypeVolumesDetached); !c.IsTrue() {
		t.Fatalf("VolumesDetached: %+v", c)
	}
}

// Past the termination deadline, volume attachments are not waited for.
func TestVolumeAttachmentsAreNotWaitedForPastTheDeadline(t *testing.T) {
	f := setup(t)
	nc, node := f.launch(t, "volumes-deadline", 2*time.Minute)
	attachment(t, f, "va-stuck", node, "pv-stuck")
	ExpectDeleted(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	f.pass(t, node)
	if gone(f.ctx, t, node) {
		t.Fatal("node released with a volume attached before the deadline")
	}
	f.clk.Step(2*time.Minute + 10*time.Second)
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, node)
	if c := condition(f.ctx, t, nc, v1.ConditionTypeVolumesDetached); !c.IsFalse() || c.Reason != "TerminationGracePeriodElapsed" {
		t.Fatalf("VolumesDetached: %+v", c)
	}
}

// The eviction queue, run as it is under a manager, waits on its clock:
// a refused pod is retried only when the clock reaches its backoff.
func TestEvictionQueueRetriesOnItsClock(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "queue", 0)
	p := f.pod(t, "web", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	pdb := f.pdb(t, "web", "web", 0)
	refused := testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("429"))
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.ctrl.Queue.Start(ctx) }()

	f.ctrl.Queue.Add(node, eviction.ReasonForceful, p)
	Eventually(t, 10*time.Second, func() error {
		if testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("429")) != refused+1 || !f.clk.HasWaiters() {
			return errNotYet
		}
		return nil
	})
	// The refused pod waits in the queue, and karpenter_nodes_eviction_queue_depth says so.
	if got := testutil.ToFloat64(eviction.QueueDepth); got != 1 {
		t.Fatalf("karpenter_nodes_eviction_queue_depth while the PDB refuses: %v, want 1", got)
	}
	f.allow(t, pdb, 1)
	if terminating(f.ctx, t, p) {
		t.Fatal("retried before the clock moved")
	}
	f.clk.Step(eviction.BaseDelay)
	// The API server deletes the pod before the eviction call returns to the queue, which forgets
	// the pod only then: poll both.
	Eventually(t, 10*time.Second, func() error {
		if !gone(f.ctx, t, p) {
			return errNotYet
		}
		if n := f.ctrl.Queue.Len(); n != 0 {
			return fmt.Errorf("%d pods left in the queue after the eviction", n)
		}
		return nil
	})
	// The gauge is set once the round that evicted the pod ends.
	Eventually(t, 10*time.Second, func() error {
		if got := testutil.ToFloat64(eviction.QueueDepth); got != 0 {
			return fmt.Errorf("karpenter_nodes_eviction_queue_depth after the eviction: %v, want 0", got)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func attachment(t *testing.T, f *fixture, name string, node *corev1.Node, pv string) *storagev1.VolumeAttachment {
	t.Helper()
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com",
			NodeName: node.Name,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		},
	}
	ExpectApplied(f.ctx, t, e.Client, va)
	return va
}

func hasTaint(node *corev1.Node, taint corev1.Taint) bool {
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&taint) {
			return true
		}
	}
	return false
}

var errNotYet = errors.New("not yet")

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// An eviction the API server granted but never carried out (the controller
// was killed mid-request: the PDB records the pod in status.disruptedPods,
// the pod keeps running) is completed by deleting that pod: the budget
// already counts it as gone. A pod the budget did not grant, or granted too
// long ago (the disruption controller has dropped the grant), is not deleted.
func TestGrantedEvictionIsCompleted(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "granted", 0)
	granted := f.pod(t, "web-granted", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	other := f.pod(t, "web-other", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	stale := f.pod(t, "web-stale", node, fixtures.WithLabels(map[string]string{"app": "web"}))
	pdb := f.pdb(t, "web", "web", 0)
	pdb = ExpectExists(f.ctx, t, e.Client, pdb)
	pdb.Status.DisruptedPods = map[string]metav1.Time{
		granted.Name: metav1.NewTime(f.clk.Now().Add(-10 * time.Second)),
		stale.Name:   metav1.NewTime(f.clk.Now().Add(-eviction.GrantedEvictionTimeout - time.Second)),
	}
	ExpectStatusUpdated(f.ctx, t, e.Client, pdb)

	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	if !terminating(f.ctx, t, granted) {
		t.Fatal("the pod whose eviction the PDB had granted is still running")
	}
	if terminating(f.ctx, t, other) {
		t.Fatal("a pod the PDB did not grant was deleted")
	}
	if terminating(f.ctx, t, stale) {
		t.Fatal("a pod whose grant had expired was deleted")
	}
}

// A do-not-disrupt duration holds its pod until it elapses from the pod's
// start, and an invalid value is ignored; the drain tells the pods so in
// upstream's events.
func TestDoNotDisruptDurationHoldsThePodUntilItElapses(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "dnd-duration", 0)
	keep := f.pod(t, "for-an-hour", node, withAnnotation(v1.DoNotDisruptAnnotationKey, "1h"))
	bogus := f.pod(t, "bogus", node, withAnnotation(v1.DoNotDisruptAnnotationKey, "soon"))
	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	f.pass(t, node)
	if terminating(f.ctx, t, keep) {
		t.Fatal("pod evicted within its do-not-disrupt duration")
	}
	ExpectNotFound(f.ctx, t, e.Client, bogus)
	evs := f.events()
	if !hasEvent(evs, "Normal DoNotDisruptUntil The karpenter.sh/do-not-disrupt grace period will elapse at ") {
		t.Fatalf("no DoNotDisruptUntil event: %q", evs)
	}
	if !hasEvent(evs, `Warning InvalidDoNotDisruptAnnotation Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "soon" as a duration`, "ignoring annotation") {
		t.Fatalf("no InvalidDoNotDisruptAnnotation event: %q", evs)
	}
	f.clk.Step(time.Hour + time.Minute)
	f.pass(t, node)
	if !hasEvent(f.events(), "Normal DoNotDisruptGracePeriodElapsed The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable") {
		t.Fatal("no DoNotDisruptGracePeriodElapsed event")
	}
	f.pass(t, node)
	ExpectNotFound(f.ctx, t, e.Client, keep)
}

// TestStalePDBStatusDoesNotLetAnEvictionThrough: the API server decides an
// eviction from the PodDisruptionBudget's status, which can lag the pods (the
// disruption controller of kube-controller-manager recomputes it after the
// fact, seconds late after an API server restart). Here the status still
// allows one disruption of three pods (desired healthy 2) while one of the
// others is no longer Ready: evicting web-a would leave one healthy pod. The
// queue counts the pods itself and waits, explaining why; once the third pod
// is Ready again the eviction goes through.
func TestStalePDBStatusDoesNotLetAnEvictionThrough(t *testing.T) {
	f := setup(t)
	_, node := f.launch(t, "stale", 0)
	_, other := f.launch(t, "stale-other", 0)
	web := fixtures.WithLabels(map[string]string{"app": "web"})
	a := f.pod(t, "web-a", node, web)
	f.pod(t, "web-b", other, web)
	c := f.pod(t, "web-c", other, web)
	pdb := fixtures.PodDisruptionBudget("web", fixtures.WithMaxUnavailable(intstr.FromInt32(1)), fixtures.WithSelector(map[string]string{"app": "web"}))
	if err := e.Client.Create(f.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	f.setPDBStatus(t, pdb, 1, 3, 2) // as when all three were healthy
	c = ExpectExists(f.ctx, t, e.Client, c)
	c.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	ExpectStatusUpdated(f.ctx, t, e.Client, c)
	requests := func() float64 {
		return testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("200")) +
			testutil.ToFloat64(eviction.EvictionRequestsTotal.WithLabelValues("429"))
	}
	before := requests()

	ExpectDeleted(f.ctx, t, e.Client, node)
	f.pass(t, node)
	if terminating(f.ctx, t, a) {
		t.Fatal("web-a was evicted although it would leave one healthy pod of the two the PDB requires")
	}
	if got := requests(); got != before {
		t.Fatalf("the Eviction API was asked %v times; the queue should have waited without asking", got-before)
	}
	if why := f.ctrl.Queue.Blocked(a); !strings.Contains(why, "would leave 1 healthy pods selected by PodDisruptionBudget web, below the 2 it requires") {
		t.Fatalf("Blocked(web-a) = %q", why)
	}

	c = ExpectExists(f.ctx, t, e.Client, c)
	c.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	ExpectStatusUpdated(f.ctx, t, e.Client, c)
	f.clk.Step(eviction.MaxDelay)
	f.ctrl.Queue.EvictDue(f.ctx)
	if !terminating(f.ctx, t, a) {
		t.Fatalf("web-a not evicted once the PDB's pods allowed it: %q", f.ctrl.Queue.Blocked(a))
	}
}
