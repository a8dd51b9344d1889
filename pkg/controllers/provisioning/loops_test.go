package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var dedicated = corev1.Taint{Key: "example.com/dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}

// becomeNode turns the NodeClaim into what the lifecycle controllers and the
// kubelet would make of it: an initialized node of 2 cpu named after it. With
// daemonCPU set, a DaemonSet pod requesting that much runs on it.
func becomeNode(t *testing.T, f *fixture, nc *v1.NodeClaim, daemonCPU string) {
	t.Helper()
	resources := fixtures.ResourceList("cpu", "2", "pods", "10")
	n := fixtures.Node(nc.Name,
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", v1.NodeInitializedLabelKey: "true", corev1.LabelHostname: nc.Name}),
		fixtures.WithTaints(dedicated), fixtures.WithProviderID("kwok://"+nc.Name),
		fixtures.WithAllocatable(resources), fixtures.WithCapacity(resources), fixtures.NodeReady())
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	// Admission added node.kubernetes.io/not-ready; no node lifecycle controller runs here.
	n.Spec.Taints = []corev1.Taint{dedicated}
	ExpectApplied(f.ctx, t, testEnv.Client, n)
	cur := ExpectExists(f.ctx, t, testEnv.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	cur.Status.ProviderID, cur.Status.NodeName = "kwok://"+nc.Name, nc.Name
	cs := cur.StatusConditions()
	cs.Now = f.clock.Now
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		cs.SetTrue(c)
	}
	ExpectApplied(f.ctx, t, testEnv.Client, cur)
	if daemonCPU != "" {
		ExpectApplied(f.ctx, t, testEnv.Client, fixtures.Pod("agent-"+nc.Name, fixtures.OnNode(nc.Name), fixtures.WithRequests("cpu", daemonCPU),
			fixtures.WithTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent-uid", Controller: ptr.To(true)})))
	}
}

// bind binds the pod to the node, as kube-scheduler does.
func bind(t *testing.T, f *fixture, pod *corev1.Pod, node string) {
	t.Helper()
	if err := testEnv.KubeClient.CoreV1().Pods(pod.Namespace).Bind(f.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectGone waits until the API server no longer has obj.
func expectGone(t *testing.T, f *fixture, obj client.Object) {
	t.Helper()
	Eventually(t, 10*time.Second, func() error {
		err := testEnv.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if err == nil {
			return fmt.Errorf("%s still exists", obj.GetName())
		}
		return client.IgnoreNotFound(err)
	})
}

// replicaPod is a pending pod of the ReplicaSet "web" (uid rs-web).
func replicaPod(name, cpu string) *corev1.Pod {
	p := pendingPod(name, cpu)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}
	return p
}

func launchLoopsTotal(t *testing.T) float64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "karpenter_provisioner_launch_loops_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("karpenter_provisioner_launch_loops_total is not registered")
	return 0
}

func launchLoopEvents(f *fixture) []string {
	var out []string
	for _, e := range f.events() {
		if strings.HasPrefix(e, "Warning "+provisioning.EventLaunchLoop+" ") {
			out = append(out, e)
		}
	}
	return out
}

// loopOnce launches for the pending pods and makes the single NodeClaim a node
// a DaemonSet pod fills, so the pods do not fit on it.
func loopOnce(t *testing.T, f *fixture, round int) string {
	t.Helper()
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || len(res.Held) != 0 {
		t.Fatalf("launch %d: %d nodeclaims, %d pods held (errors %v)", round, len(res.NodeClaims), len(res.Held), res.Solve.PodErrors)
	}
	becomeNode(t, f, res.NodeClaims[0], "1500m")
	f.clock.Step(time.Minute)
	return res.NodeClaims[0].Name
}

// A pod whose NodeClaims keep becoming nodes it does not fit on (a DaemonSet
// pod takes the room) gets LaunchLoopThreshold of them, then no more: a
// LaunchLoop event names them and what to check, the metric counts the stop,
// later decisions launch nothing for it, and the back-off ends the stop.
func TestLaunchLoopStopsLaunchingForAPodItsNodesNeverHold(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("looping", "1"))
	before := launchLoopsTotal(t)
	var claims []string
	for i := 1; i <= provisioning.LaunchLoopThreshold; i++ {
		claims = append(claims, loopOnce(t, f, i))
	}
	f.events()

	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d more nodeclaims for a pod %d nodes in a row did not hold", len(res.NodeClaims), len(claims))
	}
	if len(res.Held) != 1 || res.Held[0].Name != "looping" {
		t.Fatalf("held %v, want the pod", res.Held)
	}
	evs := launchLoopEvents(f)
	if len(evs) != 1 {
		t.Fatalf("LaunchLoop events %v, want one", evs)
	}
	for _, want := range append(claims, "DaemonSet", "LimitRange", "preemption") {
		if !strings.Contains(evs[0], want) {
			t.Errorf("event %q does not mention %q", evs[0], want)
		}
	}
	if got := launchLoopsTotal(t) - before; got != 1 {
		t.Errorf("karpenter_provisioner_launch_loops_total grew by %v, want 1", got)
	}

	f.clock.Step(time.Minute)
	res = f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Held) != 1 {
		t.Fatalf("during the stop: %d nodeclaims, %d held", len(res.NodeClaims), len(res.Held))
	}
	if evs := launchLoopEvents(f); len(evs) != 0 {
		t.Errorf("the event was repeated within the dedupe window: %v", evs)
	}

	f.clock.Step(provisioning.LaunchLoopBackoff)
	res = f.schedule(t)
	if len(res.NodeClaims) != 1 || len(res.Held) != 0 {
		t.Fatalf("after the back-off: %d nodeclaims, %d held, want a launch", len(res.NodeClaims), len(res.Held))
	}
}

// A ReplicaSet's pod preempted from each new node (a higher-priority DaemonSet
// pod takes its place) is replaced by another pod just like it: the loop is
// the ReplicaSet's, and it stops all the same.
func TestLaunchLoopFollowsReplacedPodsOfOneController(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	pod := replicaPod("web-1", "1")
	ExpectApplied(f.ctx, t, testEnv.Client, pod)
	for i := 1; i <= provisioning.LaunchLoopThreshold; i++ {
		res := f.schedule(t)
		if len(res.NodeClaims) != 1 || len(res.Held) != 0 {
			t.Fatalf("launch %d: %d nodeclaims, %d held", i, len(res.NodeClaims), len(res.Held))
		}
		becomeNode(t, f, res.NodeClaims[0], "1500m")
		// Preempted: the pod goes, the ReplicaSet creates the next.
		ExpectDeleted(f.ctx, t, testEnv.Client, pod)
		expectGone(t, f, pod)
		ExpectReconciled(f.ctx, t, f.informers[2], pod)
		pod = replicaPod("web-"+string(rune('1'+i)), "1")
		ExpectApplied(f.ctx, t, testEnv.Client, pod)
		f.clock.Step(time.Minute)
	}
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Held) != 1 || res.Held[0].Name != pod.Name {
		t.Fatalf("after %d nodes the ReplicaSet's pods never ran on: %d nodeclaims, held %v", provisioning.LaunchLoopThreshold, len(res.NodeClaims), res.Held)
	}
	if evs := launchLoopEvents(f); len(evs) != 1 || !strings.Contains(evs[0], "ReplicaSet web") {
		t.Fatalf("LaunchLoop events %v, want one naming the ReplicaSet", evs)
	}
}

// A stop ends as soon as what it was decided on changes: here a DaemonSet
// appears (the pods new nodes run are no longer the same), and the pod is
// launched for at once.
func TestLaunchLoopResumesWhenTheDaemonSetsChange(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("looping", "1"))
	for i := 1; i <= provisioning.LaunchLoopThreshold; i++ {
		loopOnce(t, f, i)
	}
	if res := f.schedule(t); len(res.NodeClaims) != 0 || len(res.Held) != 1 {
		t.Fatalf("not stopped: %d nodeclaims, %d held", len(res.NodeClaims), len(res.Held))
	}
	ExpectApplied(f.ctx, t, testEnv.Client, fixtures.DaemonSet("logs", fixtures.WithRequests("cpu", "100m"),
		fixtures.WithTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists})))
	res := f.schedule(t)
	if len(res.Held) != 0 || len(res.NodeClaims) != 1 {
		t.Fatalf("after a DaemonSet change: %d nodeclaims, %d held, want a launch", len(res.NodeClaims), len(res.Held))
	}
}

// So does a change of the NodePool.
func TestLaunchLoopResumesWhenANodePoolChanges(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np)
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("looping", "1"))
	for i := 1; i <= provisioning.LaunchLoopThreshold; i++ {
		loopOnce(t, f, i)
	}
	if res := f.schedule(t); len(res.NodeClaims) != 0 || len(res.Held) != 1 {
		t.Fatalf("not stopped: %d nodeclaims, %d held", len(res.NodeClaims), len(res.Held))
	}
	np = ExpectExists(f.ctx, t, testEnv.Client, np)
	np.Spec.Template.ObjectMeta.Labels["team"] = "green"
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	res := f.schedule(t)
	if len(res.Held) != 0 || len(res.NodeClaims) != 1 {
		t.Fatalf("after a NodePool change: %d nodeclaims, %d held, want a launch", len(res.NodeClaims), len(res.Held))
	}
}

// Scale-ups are never stopped: pods of one ReplicaSet launched for in many
// rounds, each bound to the node launched for it (as kube-scheduler binds
// them), or not bound yet when the next round comes (kube-scheduler is behind;
// the solver counts the pod on its node), launch every time.
func TestLaunchLoopNeverStopsAScaleUp(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	var waiting *corev1.Pod
	waitingOn := ""
	for i := 0; i < 2*provisioning.LaunchLoopThreshold+1; i++ {
		pod := replicaPod("web-"+string(rune('a'+i)), "1500m")
		ExpectApplied(f.ctx, t, testEnv.Client, pod)
		res := f.schedule(t)
		if len(res.NodeClaims) != 1 || len(res.Held) != 0 {
			t.Fatalf("round %d: %d nodeclaims, %d pods held", i+1, len(res.NodeClaims), len(res.Held))
		}
		if waiting != nil {
			// Bound only now, after the solver counted it on its node.
			bind(t, f, waiting, waitingOn)
			waiting = nil
		}
		becomeNode(t, f, res.NodeClaims[0], "100m")
		if i%2 == 0 {
			bind(t, f, pod, res.NodeClaims[0].Name)
		} else {
			waiting, waitingOn = pod, res.NodeClaims[0].Name
		}
		f.clock.Step(time.Minute)
	}
	if evs := launchLoopEvents(f); len(evs) != 0 {
		t.Fatalf("LaunchLoop events during a scale-up: %v", evs)
	}
}

// The overhead a new NodeClaim is sized with is the DaemonSet's pod as
// admitted: a DaemonSet requesting no cpu in a namespace whose LimitRange
// defaults cpu to 2 runs pods of 2 cpu, and the NodeClaim requests them.
func TestNodeClaimRequestsTheDaemonSetsAdmittedPod(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ExpectApplied(f.ctx, t, testEnv.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "limited"}},
		&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "limited"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}}}})
	t.Cleanup(func() {
		_ = testEnv.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("limited"), client.GracePeriodSeconds(0))
	})
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	ds := fixtures.DaemonSet("agent", fixtures.WithNamespace("limited"), fixtures.WithTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}))
	ExpectApplied(f.ctx, t, testEnv.Client, ds, pendingPod("app", "1"))

	overhead := func() (resource.Quantity, *v1.NodeClaim) {
		t.Helper()
		res := f.schedule(t)
		if len(res.NodeClaims) != 1 {
			t.Fatalf("%d nodeclaims (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
		}
		return res.Solve.NewClaims[0].DaemonSetOverhead[corev1.ResourceCPU], res.NodeClaims[0]
	}
	// Without a pod of the DaemonSet yet, its template: no cpu.
	cpu, first := overhead()
	if !cpu.IsZero() {
		t.Fatalf("overhead %s cpu from a template requesting none", cpu.String())
	}
	// That NodeClaim goes away (it failed to launch, say): the pod is solved again.
	ExpectFinalizersRemoved(f.ctx, t, testEnv.Client, first)
	ExpectDeleted(f.ctx, t, testEnv.Client, first)
	expectGone(t, f, first)
	ExpectReconciled(f.ctx, t, f.informers[1], first)

	agent := fixtures.Pod("agent-x1", fixtures.WithNamespace("limited"), fixtures.WithLabels(map[string]string{"app": "agent"}),
		fixtures.WithTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}),
		fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: ExpectExists(f.ctx, t, testEnv.Client, ds).UID, Controller: ptr.To(true)}))
	ExpectApplied(f.ctx, t, testEnv.Client, agent)
	if got := agent.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Fatalf("the LimitRange admitted the DaemonSet's pod with %s cpu, want 2", got.String())
	}
	cpu, nc := overhead()
	if cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Fatalf("overhead %s cpu, want the admitted pod's 2", cpu.String())
	}
	if got := nc.Spec.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3")) != 0 {
		t.Fatalf("nodeclaim requests %s cpu, want the pod's 1 and the DaemonSet's 2", got.String())
	}
}

// A node counts only once it has been initialized for LaunchLoopSettle: on a
// busy cluster kube-scheduler binds the pods a node was launched for seconds
// after it initializes, and the decisions in between (a scale-up in several
// batches) are no loop. Past the settle time the same nodes count.
func TestLaunchLoopWaitsForKubeSchedulerBeforeCounting(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	for i := 1; i <= provisioning.LaunchLoopThreshold+1; i++ {
		ExpectApplied(f.ctx, t, testEnv.Client, replicaPod(fmt.Sprintf("web-%d", i), "1"))
		res := f.schedule(t)
		if len(res.NodeClaims) == 0 || len(res.Held) != 0 {
			t.Fatalf("round %d, %s after the first node initialized: %d nodeclaims, %d held (a scale-up taken for a loop)",
				i, time.Duration(i-1)*5*time.Second, len(res.NodeClaims), len(res.Held))
		}
		// Its node initializes and runs a DaemonSet pod that leaves no room:
		// the pod will not fit, but kube-scheduler has not said so yet.
		for _, nc := range res.NodeClaims {
			becomeNode(t, f, nc, "1500m")
		}
		f.clock.Step(5 * time.Second)
	}
	if evs := launchLoopEvents(f); len(evs) != 0 {
		t.Fatalf("LaunchLoop events within %s of the nodes' initialization: %v", provisioning.LaunchLoopSettle, evs)
	}
	f.clock.Step(provisioning.LaunchLoopSettle)
	ExpectApplied(f.ctx, t, testEnv.Client, replicaPod("web-last", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Held) == 0 {
		t.Fatalf("nodes idle for %s past their initialization still launched %d nodeclaims (held %d)", provisioning.LaunchLoopSettle, len(res.NodeClaims), len(res.Held))
	}
}
