package provisioning_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// untriedPod is a pod kube-scheduler has not looked at yet: no PodScheduled
// condition.
func untriedPod(name, cpu string) *corev1.Pod {
	p := pendingPod(name, cpu)
	p.Status.Conditions = nil
	return p
}

func TestAwaitingScheduler(t *testing.T) {
	base := untriedPod("p", "1")
	mod := func(f func(p *corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); f(p); return p }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"not yet tried":        {base, true},
		"default scheduler":    {mod(func(p *corev1.Pod) { p.Spec.SchedulerName = corev1.DefaultSchedulerName }), true},
		"marked unschedulable": {pendingPod("p", "1"), false},
		"other scheduler":      {mod(func(p *corev1.Pod) { p.Spec.SchedulerName = "batch-scheduler" }), false},
		"gated":                {mod(func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} }), false},
		"bound":                {mod(func(p *corev1.Pod) { p.Spec.NodeName = "n" }), false},
		"preempting":           {mod(func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" }), false},
		"daemonset":            {mod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}} }), false},
		"terminating":          {mod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
		"succeeded":            {mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		"scheduled condition ok": {mod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}), false},
	} {
		if got := provisioning.AwaitingScheduler(tc.pod); got != tc.want {
			t.Errorf("%s: AwaitingScheduler = %v, want %v", name, got, tc.want)
		}
		if provisioning.AwaitingScheduler(tc.pod) && provisioning.IsProvisionable(tc.pod) {
			t.Errorf("%s: both awaiting the scheduler and marked unschedulable", name)
		}
	}
}

// A pod kube-scheduler has not tried yet is decided on at once: it gets a
// NodeClaim when nothing fits it, and the pod trigger opens a batch for it.
func TestPodNotYetTriedByTheSchedulerIsProvisionedFor(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), untriedPod("early", "1"))
	gated := untriedPod("gated", "1")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	ExpectApplied(f.ctx, t, testEnv.Client, gated)
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 {
		t.Fatalf("%d nodeclaims for a pod nothing can hold, want 1", len(res.NodeClaims))
	}
	if got := len(res.Solve.NewClaims[0].Pods); got != 1 {
		t.Fatalf("the claim holds %d pods, want the untried one only (the gated pod waits for its gate)", got)
	}

	b := provisioning.NewBatcher(f.clock, time.Second, 10*time.Second)
	trigger := provisioning.NewPodTrigger(testEnv.Client, b)
	if res := ExpectReconciled(f.ctx, t, trigger, gated); res.RequeueAfter != 0 {
		t.Errorf("gated pod asks to be reconciled again: %v", res)
	}
	// The untried pod opens a window once; it is not re-triggered every
	// RetriggerPeriod (kube-scheduler's Unschedulable mark does that).
	if res := ExpectReconciled(f.ctx, t, trigger, untriedPod("early", "1")); res.RequeueAfter != 0 {
		t.Errorf("untried pod re-triggered every %s: %v", res.RequeueAfter, res)
	}
	if w := closeWindow(t, f, b); w.Triggers != 1 {
		t.Errorf("window of %d triggers, want the untried pod's alone (not the gated one's)", w.Triggers)
	}
}

// closeWindow waits for the window b has open to close after its idle time
// on f's clock, and returns it.
func closeWindow(t *testing.T, f *fixture, b *provisioning.Batcher) provisioning.Window {
	t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- b.Wait(ctx) }()
	for !f.clock.HasWaiters() {
		select {
		case <-ctx.Done():
			t.Fatal("no window opened: nothing triggered the batcher")
		case <-time.After(10 * time.Millisecond):
		}
	}
	f.clock.Step(time.Second)
	if !<-done {
		t.Fatal("the window did not close")
	}
	return b.LastWindow()
}

// existingNode is a Ready, initialized node of the default pool with cpu cores.
func existingNode(t *testing.T, f *fixture, cpu string) *corev1.Node {
	t.Helper()
	resources := fixtures.ResourceList("cpu", cpu, "pods", "10")
	n := fixtures.Node("existing",
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", v1.NodeInitializedLabelKey: "true"}),
		fixtures.WithTaints(corev1.Taint{Key: "example.com/dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithAllocatable(resources), fixtures.WithCapacity(resources))
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	// Admission added node.kubernetes.io/not-ready; no node lifecycle controller runs here.
	n.Spec.Taints = n.Spec.Taints[:1]
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	return n
}

// An untried pod that fits an existing node is left to kube-scheduler: the
// solver places it there, as kube-scheduler will, and nothing launches.
func TestUntriedPodThatFitsAnExistingNodeLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	existingNode(t, f, "4")
	ExpectApplied(f.ctx, t, testEnv.Client, untriedPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Solve.ExistingNodes) != 1 {
		t.Fatalf("an untried pod that fits the existing node caused %d launches", len(res.NodeClaims))
	}
}

// An untried pod that could preempt a lower-priority pod on an existing node
// is kube-scheduler's to place (by preemption): no NodeClaim until it is marked
// Unschedulable. One that may not preempt is provisioned for at once.
func TestUntriedPodThatMayPreemptWaitsForTheScheduler(t *testing.T) {
	f := newFixture(t)
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: -10}
	never := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "never"}, Value: 0, PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	ExpectApplied(f.ctx, t, testEnv.Client, low, never, nodeClass("default", true), nodePool("default", "default"))
	t.Cleanup(func() { _ = testEnv.Client.Delete(f.ctx, low); _ = testEnv.Client.Delete(f.ctx, never) })
	existingNode(t, f, "2")
	filler := pendingPod("filler", "2")
	filler.Spec.NodeName = "existing"
	filler.Spec.PriorityClassName = "low"
	ExpectApplied(f.ctx, t, testEnv.Client, filler)
	if filler.Spec.Priority == nil || *filler.Spec.Priority != -10 {
		t.Fatalf("priority admission did not resolve the class: %v", filler.Spec.Priority)
	}
	ExpectApplied(f.ctx, t, testEnv.Client, untriedPod("preemptor", "1"))
	if res := f.schedule(t); len(res.NodeClaims) != 0 {
		t.Fatalf("%d nodeclaims for a pod kube-scheduler may preempt for", len(res.NodeClaims))
	}

	polite := untriedPod("polite", "1")
	polite.Spec.PriorityClassName = "never"
	ExpectApplied(f.ctx, t, testEnv.Client, polite)
	if polite.Spec.PreemptionPolicy == nil || *polite.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("priority admission did not set the preemption policy: %v", polite.Spec.PreemptionPolicy)
	}
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || len(res.Solve.NewClaims[0].Pods) != 1 || res.Solve.NewClaims[0].Pods[0].Name != "polite" {
		t.Fatalf("want one nodeclaim for the pod that never preempts, got %d", len(res.NodeClaims))
	}

	// Marked Unschedulable, the preemptor is provisioned for as usual.
	marked := pendingPod("preemptor", "1")
	ExpectApplied(f.ctx, t, testEnv.Client, marked)
	res = f.schedule(t)
	placed := false
	for _, c := range res.Solve.NewClaims {
		for _, p := range c.Pods {
			placed = placed || p.Name == "preemptor"
		}
	}
	for _, e := range res.Solve.ExistingNodes {
		for _, p := range e.Pods {
			placed = placed || p.Name == "preemptor"
		}
	}
	if !placed {
		t.Fatal("the preemptor marked Unschedulable was not solved for")
	}
}
