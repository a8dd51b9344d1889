package disrupter_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

type fixture struct {
	ctx       context.Context
	clock     *clocktesting.FakeClock
	cluster   *state.Cluster
	informers []*informer.Controller
	recorder  *record.FakeRecorder
	cp        *kwok.CloudProvider
	queue     *orchestration.Queue
	ctrl      *disrupter.Controller
	prov      *provisioning.Provisioner
	types     map[string]*scheduling.InstanceType
}

// newFixture starts from an empty cluster with a Ready KWOKNodeClass and a
// NodePool "default" (on-demand amd64 linux, consolidateAfter 0s,
// WhenEmptyOrUnderutilized, budget 100% unless budgets are given).
func newFixture(t *testing.T, budgets ...v1.Budget) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cleanup := func() {
		c := context.Background()
		ncs := &v1.NodeClaimList{}
		_ = testEnv.Client.List(c, ncs)
		for i := range ncs.Items {
			ExpectFinalizersRemoved(c, t, testEnv.Client, &ncs.Items[i])
		}
		_ = testEnv.Client.DeleteAllOf(c, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		_ = testEnv.Client.DeleteAllOf(c, &policyv1.PodDisruptionBudget{}, client.InNamespace("default"))
		ExpectCleanedUp(c, t, testEnv.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{}, &kwokv1alpha1.KWOKNodeClassList{}, &corev1.PodList{}, &policyv1.PodDisruptionBudgetList{})
	}
	cleanup()
	t.Cleanup(cleanup)
	f := &fixture{ctx: ctx, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), recorder: record.NewFakeRecorder(10000), types: map[string]*scheduling.InstanceType{}}
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	f.cp = kwok.New(ctx, testEnv.Client, f.clock, catalog)
	its, _ := f.cp.GetInstanceTypes(ctx, nil)
	for _, it := range its {
		f.types[it.Name] = it
	}
	f.cluster = state.NewCluster(f.clock, testEnv.Client)
	f.informers = informer.All(testEnv.Client, f.cluster)
	prov := provisioning.NewProvisioner(testEnv.Client, f.cp, f.cluster, f.recorder, f.clock, provisioning.Options{SyncTimeout: 2 * time.Second})
	f.queue = orchestration.NewQueue(testEnv.Client, f.cluster, f.recorder, f.clock)
	f.ctrl = disrupter.NewController(testEnv.Client, f.cluster, prov, f.cp, f.queue, f.recorder, f.clock, disrupter.Options{})
	f.prov = prov

	nc := fixtures.KWOKNodeClass("default", 0, true)
	if len(budgets) == 0 {
		budgets = []v1.Budget{{Nodes: "100%"}}
	}
	np := fixtures.NodePool("default",
		fixtures.WithRequirements(
			fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand),
			fixtures.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			fixtures.Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux")),
		fixtures.WithConsolidateAfter("0s"),
		fixtures.WithConsolidationPolicy(v1.ConsolidationPolicyWhenEmptyOrUnderutilized),
		fixtures.WithBudgets(budgets...))
	ExpectApplied(ctx, t, testEnv.Client, nc, np)
	return f
}

// node creates a registered, initialized, Ready, Consolidatable on-demand node
// of the instance type, with its NodeClaim.
func (f *fixture) node(t *testing.T, name, itName string, opts ...func(*v1.NodeClaim)) (*corev1.Node, *v1.NodeClaim) {
	t.Helper()
	it, ok := f.types[itName]
	if !ok {
		t.Fatalf("unknown instance type %s", itName)
	}
	lbls := fixtures.WithLabels(map[string]string{
		v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: itName, corev1.LabelTopologyZone: kwok.Zones[0],
		v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		corev1.LabelHostname: name, v1.NodeInitializedLabelKey: "true", v1.NodeRegisteredLabelKey: "true",
	})
	providerID := fixtures.WithProviderID(kwok.ProviderIDPrefix + name)
	capacity, allocatable := fixtures.WithCapacity(it.Capacity), fixtures.WithAllocatable(it.Allocatable())
	nc := fixtures.NodeClaim(name, lbls,
		fixtures.WithRequirements(fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, itName)),
		fixtures.WithNodeName(name), providerID, capacity, allocatable)
	cs := nc.StatusConditions()
	cs.Now = f.clock.Now
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeConsolidatable} {
		cs.SetTrue(c)
	}
	for _, o := range opts {
		o(nc)
	}
	node := fixtures.Node(name, lbls, providerID, capacity, allocatable, fixtures.NodeReady())
	ExpectApplied(f.ctx, t, testEnv.Client, nc, node)
	// The API server's admission taints new nodes not-ready; a Ready node's
	// taint is gone.
	node.Spec.Taints = nil
	if err := testEnv.Client.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	return node, nc
}

func notConsolidatable(nc *v1.NodeClaim) { nc.StatusConditions().Clear(v1.ConditionTypeConsolidatable) }

func driftedCondition(nc *v1.NodeClaim) {
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeDrifted, "NodePoolDrifted", "the nodepool's template changed")
}

// pod creates a running pod bound to the node.
func (f *fixture) pod(t *testing.T, name, node, cpu string, lbls map[string]string) *corev1.Pod {
	t.Helper()
	p := fixtures.Pod(name, fixtures.WithLabels(lbls), fixtures.OnNode(node),
		fixtures.WithRequests("cpu", cpu, "memory", "256Mi"), fixtures.WithPhase(corev1.PodRunning))
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	return p
}

func (f *fixture) pdb(t *testing.T, name string, allowed int32, lbls map[string]string) {
	t.Helper()
	p := fixtures.PodDisruptionBudget(name, fixtures.WithMinAvailable(intstr.FromInt32(1)), fixtures.WithSelector(lbls),
		fixtures.WithPDBStatus(policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ExpectedPods: 1, CurrentHealthy: 1, DesiredHealthy: 1}))
	ExpectApplied(f.ctx, t, testEnv.Client, p)
}

// sync feeds every object of the API into cluster state, as the informers would.
func (f *fixture) sync(t *testing.T) {
	t.Helper()
	lists := []client.ObjectList{&v1.NodePoolList{}, &v1.NodeClaimList{}, &corev1.NodeList{}, &corev1.PodList{}}
	for _, l := range lists {
		if err := testEnv.Client.List(f.ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for i := range lists[0].(*v1.NodePoolList).Items {
		ExpectReconciled(f.ctx, t, f.informers[4], &lists[0].(*v1.NodePoolList).Items[i])
	}
	for i := range lists[1].(*v1.NodeClaimList).Items {
		ExpectReconciled(f.ctx, t, f.informers[1], &lists[1].(*v1.NodeClaimList).Items[i])
	}
	for i := range lists[2].(*corev1.NodeList).Items {
		ExpectReconciled(f.ctx, t, f.informers[0], &lists[2].(*corev1.NodeList).Items[i])
	}
	for i := range lists[3].(*corev1.PodList).Items {
		ExpectReconciled(f.ctx, t, f.informers[2], &lists[3].(*corev1.PodList).Items[i])
	}
}

type passResult struct {
	acted bool
	err   error
}

// startPass runs one pass in the background.
func (f *fixture) startPass(t *testing.T) <-chan passResult {
	t.Helper()
	f.sync(t)
	done := make(chan passResult, 1)
	go func() {
		acted, err := f.ctrl.Reconcile(f.ctx)
		done <- passResult{acted, err}
	}()
	return done
}

// awaitValidation waits until the pass sleeps on the clock before validating.
func (f *fixture) awaitValidation(t *testing.T, done <-chan passResult) {
	t.Helper()
	Eventually(t, 20*time.Second, func() error {
		select {
		case r := <-done:
			t.Fatalf("the pass ended (acted %v, err %v) instead of waiting to validate", r.acted, r.err)
		default:
		}
		if !f.clock.HasWaiters() {
			return fmt.Errorf("the pass is not waiting on the clock yet")
		}
		return nil
	})
}

func (f *fixture) finish(t *testing.T, done <-chan passResult) passResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the pass did not finish")
	}
	return passResult{}
}

// pass runs a pass to the end, stepping the clock past the validation delay
// when the pass waits for it.
func (f *fixture) pass(t *testing.T) passResult {
	t.Helper()
	done := f.startPass(t)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case r := <-done:
			return r
		case <-deadline:
			t.Fatal("the disruption pass did not finish within 60s")
			return passResult{}
		case <-time.After(10 * time.Millisecond):
			if f.clock.HasWaiters() {
				f.clock.Step(disrupter.ValidationDelay)
			}
		}
	}
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

func containsEvent(events []string, sub string) bool {
	for _, e := range events {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// gaugeSeries reads the series of vec with exactly these label values and
// fails the test when the last pass did not export it (a missing series would
// otherwise read as 0 through WithLabelValues).
func gaugeSeries(t *testing.T, vec *prometheus.GaugeVec, labels map[string]string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { vec.Collect(ch); close(ch) }()
	found, value := false, 0.0
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, lp := range out.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if maps.Equal(got, labels) {
			found, value = true, out.GetGauge().GetValue()
		}
	}
	if !found {
		t.Fatalf("no series %v exported", labels)
	}
	return value
}
