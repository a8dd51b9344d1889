package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

// instanceTypes is a cloud provider that only answers GetInstanceTypes: the
// provisioner never launches, it writes NodeClaims. It is a plain implementation of
// the interface, not a Kubernetes fake.
type instanceTypes struct{ its []*scheduling.InstanceType }

func (c *instanceTypes) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, fmt.Errorf("not used")
}
func (c *instanceTypes) Delete(context.Context, *v1.NodeClaim) error { return fmt.Errorf("not used") }
func (c *instanceTypes) Get(context.Context, string) (*v1.NodeClaim, error) {
	return nil, fmt.Errorf("not used")
}
func (c *instanceTypes) List(context.Context) ([]*v1.NodeClaim, error) { return nil, nil }
func (c *instanceTypes) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return c.its, nil
}
func (c *instanceTypes) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}
func (c *instanceTypes) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
func (c *instanceTypes) Reboot(context.Context, *v1.NodeClaim, string) error {
	return cloudprovider.NewNodeRebootNotImplementedError()
}
func (c *instanceTypes) Name() string { return "test" }
func (c *instanceTypes) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&kwokv1alpha1.KWOKNodeClass{}}
}

type fixture struct {
	ctx         context.Context
	clock       *clocktesting.FakeClock
	cluster     *state.Cluster
	informers   []*informer.Controller
	recorder    *record.FakeRecorder
	provisioner *provisioning.Provisioner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), clock: clocktesting.NewFakeClock(time.Now())}
	f.cluster = state.NewCluster(f.clock, testEnv.Client)
	f.informers = informer.All(testEnv.Client, f.cluster)
	f.recorder = record.NewFakeRecorder(10000)
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second})
	t.Cleanup(func() {
		ctx := context.Background()
		ncs := &v1.NodeClaimList{}
		_ = testEnv.Client.List(ctx, ncs)
		for i := range ncs.Items {
			ExpectFinalizersRemoved(ctx, t, testEnv.Client, &ncs.Items[i])
		}
		_ = testEnv.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		ExpectCleanedUp(ctx, t, testEnv.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{}, &kwokv1alpha1.KWOKNodeClassList{}, &corev1.PodList{}, &appsv1.DaemonSetList{})
	})
	return f
}

// sync feeds every object of the API into cluster state, as the informers would.
func (f *fixture) sync(t *testing.T) {
	t.Helper()
	lists := []client.ObjectList{&v1.NodePoolList{}, &v1.NodeClaimList{}, &corev1.NodeList{}, &corev1.PodList{}, &appsv1.DaemonSetList{}}
	for _, l := range lists {
		if err := testEnv.Client.List(f.ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, np := range lists[0].(*v1.NodePoolList).Items {
		ExpectReconciled(f.ctx, t, f.informers[4], &np)
	}
	for _, nc := range lists[1].(*v1.NodeClaimList).Items {
		ExpectReconciled(f.ctx, t, f.informers[1], &nc)
	}
	for _, n := range lists[2].(*corev1.NodeList).Items {
		ExpectReconciled(f.ctx, t, f.informers[0], &n)
	}
	for _, p := range lists[3].(*corev1.PodList).Items {
		ExpectReconciled(f.ctx, t, f.informers[2], &p)
	}
	for _, ds := range lists[4].(*appsv1.DaemonSetList).Items {
		ExpectReconciled(f.ctx, t, f.informers[3], &ds)
	}
}

func (f *fixture) schedule(t *testing.T) *provisioning.Result {
	t.Helper()
	f.sync(t)
	res, err := f.provisioner.Schedule(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// events drains the recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func nodeClass(name string, ready bool) *kwokv1alpha1.KWOKNodeClass {
	return fixtures.KWOKNodeClass(name, 0, ready)
}

func nodePool(name, nodeClassName string) *v1.NodePool {
	return fixtures.NodePool(name,
		fixtures.WithTemplateLabels(map[string]string{"team": "blue"}),
		fixtures.WithTemplateAnnotations(map[string]string{"example.com/owner": "blue"}),
		fixtures.WithRequirements(fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")),
		fixtures.WithTaints(corev1.Taint{Key: "example.com/dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithNodeClass(nodeClassName))
}

// pendingPod is a pod kube-scheduler found no node for, requesting cpu and
// tolerating the NodePool's taint.
func pendingPod(name, cpu string) *corev1.Pod {
	return fixtures.Pod(name,
		fixtures.WithTolerations(corev1.Toleration{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists}),
		fixtures.WithRequests("cpu", cpu),
		fixtures.Unschedulable())
}

func TestNodeClaimCarriesTemplateLabelsHashOwnerFinalizerAndRequirements(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np)
	pods := []*corev1.Pod{pendingPod("a", "1"), pendingPod("b", "1"), pendingPod("c", "500m")}
	ExpectApplied(f.ctx, t, testEnv.Client, pods[0], pods[1], pods[2])
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 {
		t.Fatalf("want 1 nodeclaim for 2.5 cpu, got %d (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	nc := ExpectExists(f.ctx, t, testEnv.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: res.NodeClaims[0].Name}})
	if !strings.HasPrefix(nc.Name, "default-") {
		t.Errorf("name %q not generated from the nodepool", nc.Name)
	}
	if nc.Labels[v1.NodePoolLabelKey] != "default" || nc.Labels["team"] != "blue" || nc.Labels["karpenter.kwok.sh/kwoknodeclass"] != "default" {
		t.Errorf("labels %v (want nodepool, template and NodeClass labels)", nc.Labels)
	}
	if nc.Annotations["example.com/owner"] != "blue" || nc.Annotations[v1.NodePoolHashAnnotationKey] != np.Hash() ||
		nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		t.Errorf("annotations %v", nc.Annotations)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].UID != np.UID {
		t.Errorf("owner references %v", nc.OwnerReferences)
	}
	if len(nc.Finalizers) != 1 || nc.Finalizers[0] != v1.TerminationFinalizer {
		t.Errorf("finalizers %v", nc.Finalizers)
	}
	if len(nc.Spec.Taints) != 1 || nc.Spec.Taints[0].Key != "example.com/dedicated" {
		t.Errorf("taints %v", nc.Spec.Taints)
	}
	if nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Name != "default" || nc.Spec.NodeClassRef.Kind != "KWOKNodeClass" {
		t.Errorf("nodeClassRef %v", nc.Spec.NodeClassRef)
	}
	reqs := map[string]v1.NodeSelectorRequirementWithMinValues{}
	for _, r := range nc.Spec.Requirements {
		reqs[r.Key] = r
	}
	if r := reqs[v1.CapacityTypeLabelKey]; r.Operator != corev1.NodeSelectorOpIn || len(r.Values) != 1 || r.Values[0] != "on-demand" {
		t.Errorf("capacity type requirement %v", r)
	}
	if r := reqs[v1.NodePoolLabelKey]; len(r.Values) != 1 || r.Values[0] != "default" {
		t.Errorf("nodepool requirement %v", r)
	}
	if _, ok := reqs[corev1.LabelHostname]; ok {
		t.Errorf("hostname placeholder leaked into the requirements")
	}
	its := reqs[corev1.LabelInstanceTypeStable]
	if its.Operator != corev1.NodeSelectorOpIn || len(its.Values) == 0 {
		t.Fatalf("instance type requirement %v", its)
	}
	// 2.5 cpu + 100m overhead: fake-it-0 (1 cpu) and fake-it-1 (2 cpu) cannot hold it;
	// the list starts with the cheapest type that can.
	if its.Values[0] != "fake-it-2" {
		t.Errorf("instance types not cheapest first: %v", its.Values)
	}
	for _, v := range its.Values {
		if v == "fake-it-0" || v == "fake-it-1" {
			t.Errorf("instance type %s too small for the pods is offered", v)
		}
	}
	if got := nc.Spec.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2500m")) != 0 {
		t.Errorf("requested cpu %s, want 2500m", got.String())
	}
	if got := nc.Spec.Resources.Requests[corev1.ResourcePods]; got.Value() != 3 {
		t.Errorf("requested pods %s, want 3", got.String())
	}
	nominated := 0
	for _, e := range f.events() {
		if strings.Contains(e, provisioning.EventNominated) && strings.Contains(e, "nodeclaim/"+nc.Name) {
			nominated++
		}
	}
	if nominated != 3 {
		t.Errorf("%d Nominated events, want one per pod", nominated)
	}

	// The same pods still pending in the next batch stay on the in-flight claim
	// launched for them (they are not solved again): no second launch.
	res = f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("second batch launched %d more nodeclaims for the same pods", len(res.NodeClaims))
	}
	if len(res.Solve.ExistingNodes) != 0 || len(res.Solve.NewClaims) != 0 {
		t.Fatalf("pods planned on the in-flight claim were solved again: %+v", res.Solve.ExistingNodes)
	}
	if !f.cluster.IsNominated(nc.Name) {
		t.Error("the in-flight claim holding the pods is not nominated")
	}

	// A new provisioner (a restart) has no plans: the pods are solved onto the
	// in-flight claim.
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second})
	res = f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("after a restart the batch launched %d more nodeclaims for the same pods", len(res.NodeClaims))
	}
	if len(res.Solve.ExistingNodes) != 1 || res.Solve.ExistingNodes[0].Node.Name != nc.Name || len(res.Solve.ExistingNodes[0].Pods) != 3 {
		t.Fatalf("pods not placed on the in-flight claim: %+v", res.Solve.ExistingNodes)
	}
}

func TestUnschedulablePodGetsTheSolversReason(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	huge := pendingPod("huge", "500")
	ExpectApplied(f.ctx, t, testEnv.Client, huge)
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims for a pod no instance type fits", len(res.NodeClaims))
	}
	perr := res.Solve.PodErrors
	if len(perr) != 1 {
		t.Fatalf("want one pod error, got %v", perr)
	}
	var reason string
	for _, err := range perr {
		reason = err.Error()
	}
	found := false
	for _, e := range f.events() {
		if strings.HasPrefix(e, "Warning "+provisioning.EventFailedScheduling) && strings.Contains(e, reason) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no FailedScheduling event carrying the solver's reason %q", reason)
	}
}

func TestNodeClassNotReadyLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	class := nodeClass("default", false)
	ExpectApplied(f.ctx, t, testEnv.Client, class, nodePool("default", "default"), nodePool("orphan", "missing"), pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims although no nodeclass is ready", len(res.NodeClaims))
	}
	if !strings.Contains(res.SkippedNodePools["default"], "not ready") || !strings.Contains(res.SkippedNodePools["orphan"], "not found") {
		t.Fatalf("skip reasons %v", res.SkippedNodePools)
	}
	class.StatusConditions().SetTrue(status.ConditionReady)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, class)
	res = f.schedule(t)
	if len(res.NodeClaims) != 1 || res.NodeClaims[0].Labels[v1.NodePoolLabelKey] != "default" {
		t.Fatalf("nodeclass ready: want 1 nodeclaim of nodepool default, got %d", len(res.NodeClaims))
	}
}

func TestNodePoolNotReadyLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	np.StatusConditions().SetFalse(v1.ConditionTypeValidationSucceeded, "Invalid", "bad template")
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np, pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 || res.SkippedNodePools["default"] == "" {
		t.Fatalf("a not-Ready nodepool launched %d nodeclaims (skipped: %v)", len(res.NodeClaims), res.SkippedNodePools)
	}
}

func TestLimitsStopProvisioning(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("8")}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np)
	// 6 pods of 1.5 cpu; fake types are 1..20 cpu. Whatever the packing, the sum of
	// launched capacity must stay within 8 cpu and some pods must be left out.
	for i := 0; i < 6; i++ {
		ExpectApplied(f.ctx, t, testEnv.Client, pendingPod(fmt.Sprintf("p%d", i), "1500m"))
	}
	res := f.schedule(t)
	if len(res.Solve.PodErrors) == 0 {
		t.Fatalf("9 cpu of pods fit under an 8 cpu limit")
	}
	total := capacityOfLaunches(t, f, res.NodeClaims)
	if total > 8 {
		t.Fatalf("launched up to %d cpu past the 8 cpu limit", total)
	}
	// The next batch, with the claims still unlaunched, launches nothing more.
	before := len(res.NodeClaims)
	res = f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("second batch launched %d more nodeclaims past the limit (first batch %d)", len(res.NodeClaims), before)
	}
}

// capacityOfLaunches is the largest cpu the claims may launch with.
func capacityOfLaunches(t *testing.T, f *fixture, ncs []*v1.NodeClaim) int64 {
	byName := map[string]int64{}
	for _, it := range fake.InstanceTypes(20) {
		byName[it.Name] = it.Capacity.Cpu().Value()
	}
	total := int64(0)
	for _, nc := range ncs {
		max := int64(0)
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelInstanceTypeStable {
				for _, v := range r.Values {
					if byName[v] > max {
						max = byName[v]
					}
				}
			}
		}
		total += max
	}
	return total
}

func TestHeavierNodePoolWins(t *testing.T) {
	f := newFixture(t)
	light, heavy := nodePool("light", "default"), nodePool("heavy", "default")
	light.Spec.Weight, heavy.Spec.Weight = ptr.To[int32](10), ptr.To[int32](50)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), light, heavy, pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || res.NodeClaims[0].Labels[v1.NodePoolLabelKey] != "heavy" {
		t.Fatalf("want one nodeclaim from nodepool heavy, got %v", res.NodeClaims)
	}
}

func TestPodsOnExistingCapacityLaunchNothing(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	existingNode(t, f, "4")
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Solve.ExistingNodes) != 1 {
		t.Fatalf("pod that fits the existing node caused %d launches", len(res.NodeClaims))
	}
	found := false
	for _, e := range f.events() {
		if strings.Contains(e, "Pod should schedule on: node/existing") {
			found = true
		}
	}
	if !found {
		t.Fatal("no Nominated event naming the existing node")
	}
}

func TestNoDecisionOnUnsyncedState(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), pendingPod("p", "1"))
	f.sync(t)
	// A NodeClaim the state has not seen (e.g. created before a restart).
	ExpectApplied(f.ctx, t, testEnv.Client, fixtures.NodeClaim("unseen",
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}),
		fixtures.WithRequirements(fixtures.Requirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"))))
	if _, err := f.provisioner.Schedule(f.ctx); err == nil || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("scheduled on an unsynced state (err %v)", err)
	}
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d nodeclaims exist; the unsynced provisioner created some", len(list.Items))
	}
}

func TestPodTriggerOnlyForProvisionablePods(t *testing.T) {
	f := newFixture(t)
	b := provisioning.NewBatcher(f.clock, time.Second, 10*time.Second)
	trigger := provisioning.NewPodTrigger(testEnv.Client, b)
	pending := pendingPod("pending", "1")
	bound := pendingPod("bound", "1")
	bound.Spec.NodeName = "somewhere"
	ExpectApplied(f.ctx, t, testEnv.Client, pending, bound)
	if res := ExpectReconciled(f.ctx, t, trigger, bound); res.RequeueAfter != 0 {
		t.Errorf("bound pod requeued: %v", res)
	}
	if res := ExpectReconciled(f.ctx, t, trigger, pending); res.RequeueAfter != provisioning.RetriggerPeriod {
		t.Errorf("pending pod not re-triggered every %s: %v", provisioning.RetriggerPeriod, res)
	}
	done := make(chan bool, 1)
	go func() { done <- b.Wait(f.ctx) }()
	for !f.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	f.clock.Step(time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the pending pod did not open a batch")
	}
}

func TestIsProvisionable(t *testing.T) {
	base := pendingPod("p", "1")
	mod := func(f func(p *corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); f(p); return p }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"unschedulable":     {base, true},
		"bound":             {mod(func(p *corev1.Pod) { p.Spec.NodeName = "n" }), false},
		"preempting":        {mod(func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" }), false},
		"not yet evaluated": {mod(func(p *corev1.Pod) { p.Status.Conditions = nil }), false},
		"other reason":      {mod(func(p *corev1.Pod) { p.Status.Conditions[0].Reason = "SchedulingGated" }), false},
		"daemonset":         {mod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}} }), false},
		"static pod":        {mod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "n"}} }), false},
		"replicaset":        {mod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "r"}} }), true},
		"terminating":       {mod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
		"failed":            {mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
	} {
		if got := provisioning.IsProvisionable(tc.pod); got != tc.want {
			t.Errorf("%s: IsProvisionable = %v, want %v", name, got, tc.want)
		}
	}
}

func TestHashIgnoresRequirementsAndTaintOrder(t *testing.T) {
	a := nodePool("a", "default")
	b := a.DeepCopy()
	b.Spec.Template.Spec.Requirements = nil
	b.Spec.Template.Spec.Taints = append([]corev1.Taint{{Key: "z", Effect: corev1.TaintEffectNoSchedule}}, b.Spec.Template.Spec.Taints...)
	a.Spec.Template.Spec.Taints = append(a.Spec.Template.Spec.Taints, corev1.Taint{Key: "z", Effect: corev1.TaintEffectNoSchedule})
	if a.Hash() != b.Hash() {
		t.Error("requirements or taint order changed the hash")
	}
	b.Spec.Template.ObjectMeta.Labels["team"] = "red"
	if a.Hash() == b.Hash() {
		t.Error("a label change did not change the hash")
	}
}

// The running provisioner turns a trigger into a decision once the batch window
// closes on the clock: nothing before the idle duration, a NodeClaim after it.
func TestStartedProvisionerLaunchesWhenTheBatchCloses(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), pendingPod("p", "1"))
	f.sync(t)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- f.provisioner.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the provisioner did not stop within 30s of its context being cancelled")
		}
	})
	f.provisioner.Trigger("p")
	Eventually(t, 5*time.Second, func() error {
		if !f.clock.HasWaiters() {
			return fmt.Errorf("batch window not open")
		}
		return nil
	})
	count := func() int {
		l := &v1.NodeClaimList{}
		if err := testEnv.Client.List(f.ctx, l); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	f.clock.Step(500 * time.Millisecond)
	if n := count(); n != 0 {
		t.Fatalf("%d nodeclaims before the batch closed", n)
	}
	f.clock.Step(500 * time.Millisecond)
	Eventually(t, 10*time.Second, func() error {
		if n := count(); n != 1 {
			return fmt.Errorf("%d nodeclaims", n)
		}
		return nil
	})
}

func TestPodsStateMetricFollowsThePod(t *testing.T) {
	f := newFixture(t)
	trigger := provisioning.NewPodTrigger(testEnv.Client, provisioning.NewBatcher(f.clock, time.Second, 10*time.Second))
	p := pendingPod("metered", "1")
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	ExpectReconciled(f.ctx, t, trigger, p)
	series := func() int {
		n := 0
		mfs, err := crmetrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "karpenter_pods_state" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["name"] != "metered" {
					continue
				}
				n++
				// A pending pod: not scheduled, not ready, on no managed node.
				for k, want := range map[string]string{"scheduled": "false", "ready": "false", "managed": "false", "node": "", "owner": ""} {
					if got, ok := labels[k]; !ok || got != want {
						t.Errorf("karpenter_pods_state{%s} = %q (present %v), want %q", k, got, ok, want)
					}
				}
			}
		}
		return n
	}
	if got := series(); got != 1 {
		t.Fatalf("%d karpenter_pods_state series for the pod, want 1", got)
	}
	_ = testEnv.Client.Delete(f.ctx, p, client.GracePeriodSeconds(0))
	Eventually(t, 10*time.Second, func() error {
		if err := testEnv.Client.Get(f.ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); err == nil {
			return fmt.Errorf("pod still exists")
		}
		return nil
	})
	ExpectReconciled(f.ctx, t, trigger, p)
	if got := series(); got != 0 {
		t.Fatalf("%d series left after the pod was deleted", got)
	}
}

// TestPodsSelectTheNodeClassLabel: the NodeClass label every NodeClaim carries
// can be selected by a pod: the matching NodeClass launches, another name is
// unschedulable.
func TestPodsSelectTheNodeClassLabel(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	match, other := pendingPod("match", "1"), pendingPod("other", "1")
	match.Spec.NodeSelector = map[string]string{"karpenter.kwok.sh/kwoknodeclass": "default"}
	other.Spec.NodeSelector = map[string]string{"karpenter.kwok.sh/kwoknodeclass": "gpu"}
	ExpectApplied(f.ctx, t, testEnv.Client, match, other)
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || res.NodeClaims[0].Labels["karpenter.kwok.sh/kwoknodeclass"] != "default" {
		t.Fatalf("want one nodeclaim of NodeClass default for the matching pod, got %d (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	if len(res.Solve.PodErrors) != 1 {
		t.Fatalf("want the pod selecting NodeClass gpu unschedulable, got errors %v", res.Solve.PodErrors)
	}
	for p, err := range res.Solve.PodErrors {
		if p.Name != "other" || !strings.Contains(err.Error(), "kwoknodeclass") {
			t.Fatalf("pod error %s: %v", p.Name, err)
		}
	}
}

// failedScheduling is the text of the FailedScheduling events recorded so far.
func (f *fixture) failedScheduling() []string {
	var out []string
	for _, e := range f.events() {
		if strings.HasPrefix(e, "Warning "+provisioning.EventFailedScheduling+" ") {
			out = append(out, e)
		}
	}
	return out
}

// A pod that selects a NodePool whose NodeClass is missing is told so first,
// in the words of the NodeClassReady condition, before the other pools' reasons.
func TestPodSelectingNodePoolWithMissingNodeClassIsToldWhy(t *testing.T) {
	f := newFixture(t)
	pod := pendingPod("p", "1")
	pod.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "bad-a"}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("a-chaos", "default"), nodePool("bad-a", "missing"), pod)
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims", len(res.NodeClaims))
	}
	want := []string{`Warning FailedScheduling Failed to schedule pod, nodepool bad-a is not ready: NodeClassReady=False (NodeClassNotFound: KWOKNodeClass "missing" not found); ` +
		`incompatible with nodepool a-chaos: requires karpenter.sh/nodepool In [bad-a], but karpenter.sh/nodepool allows In [a-chaos]`}
	if got := f.failedScheduling(); !slicesEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}

	// Once the readiness controller has written the NodePool's condition, the
	// event quotes the condition.
	np := &v1.NodePool{}
	if err := testEnv.Client.Get(f.ctx, client.ObjectKey{Name: "bad-a"}, np); err != nil {
		t.Fatal(err)
	}
	np.StatusConditions().SetTrue(v1.ConditionTypeValidationSucceeded)
	np.StatusConditions().SetFalse(v1.ConditionTypeNodeClassReady, "NodeClassNotFound", `KWOKNodeClass "gone" not found`)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, np)
	f.clock.Step(time.Hour) // past the event deduplication window
	f.schedule(t)
	want[0] = strings.Replace(want[0], `"missing"`, `"gone"`, 1)
	if got := f.failedScheduling(); !slicesEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}

// A NodePool whose cpu limit is 0 can never launch: a pod is told so.
func TestPodIsToldZeroLimitAdmitsNoNode(t *testing.T) {
	f := newFixture(t)
	np := nodePool("x", "default")
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("0")}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np, pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims under a cpu limit of 0", len(res.NodeClaims))
	}
	want := []string{"Warning FailedScheduling Failed to schedule pod, nodepool x: limits allow no node (limits.cpu is 0)"}
	if got := f.failedScheduling(); !slicesEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}

// A static NodePool (spec.replicas set) takes no part in provisioning for
// pods, as upstream's; a pod that only it could hold is told why.
func TestStaticNodePoolLaunchesNothingForPods(t *testing.T) {
	f := newFixture(t)
	np := nodePool("static", "default")
	np.Spec.Replicas = ptr.To[int64](2)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np, pendingPod("p", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims from a static NodePool", len(res.NodeClaims))
	}
	got := f.failedScheduling()
	if len(got) != 1 || !strings.Contains(got[0], "nodepool static is static (spec.replicas: 2): the StaticCapacity feature gate is off") {
		t.Fatalf("events %q", got)
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNodePoolAdmittingNoInstanceTypeGetsNoCompatibleInstanceTypes(t *testing.T) {
	f := newFixture(t)
	none := fixtures.NodePool("none", fixtures.WithNodeClass("default"),
		fixtures.WithRequirements(fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "no-such-type")))
	minValues := fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "fake-it-0", "fake-it-1", "no-such-type")
	three := 3
	minValues.MinValues = &three
	short := fixtures.NodePool("short", fixtures.WithNodeClass("default"), fixtures.WithRequirements(minValues))
	fits := fixtures.NodePool("fits", fixtures.WithNodeClass("default"))
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), none, short, fits, fixtures.Pod("p", fixtures.WithRequests("cpu", "1"), fixtures.Unschedulable()))
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || res.NodeClaims[0].Labels[v1.NodePoolLabelKey] != "fits" {
		t.Fatalf("want one nodeclaim of nodepool fits, got %d (skipped %v)", len(res.NodeClaims), res.SkippedNodePools)
	}
	count := func(evs []string, want string) int {
		n := 0
		for _, e := range evs {
			if e == want {
				n++
			}
		}
		return n
	}
	plain := "Warning NoCompatibleInstanceTypes NodePool requirements filtered out all compatible available instance types"
	withMin := plain + " due to minValues incompatibility"
	evs := f.events()
	if count(evs, plain) != 1 || count(evs, withMin) != 1 {
		t.Fatalf("events %q: want one %q and one %q", evs, plain, withMin)
	}
	if res.SkippedNodePools["none"] == "" || res.SkippedNodePools["short"] == "" || res.SkippedNodePools["fits"] != "" {
		t.Fatalf("skipped %v", res.SkippedNodePools)
	}
	// Deduplicated per NodePool for a minute.
	f.schedule(t)
	if evs := f.events(); count(evs, plain)+count(evs, withMin) != 0 {
		t.Fatalf("repeated within a minute: %q", evs)
	}
	f.clock.Step(time.Minute)
	f.schedule(t)
	if evs := f.events(); count(evs, plain) != 1 || count(evs, withMin) != 1 {
		t.Fatalf("after a minute: %q", evs)
	}
}
