package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	karpentermetrics "github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

type fixture struct {
	ctx      context.Context
	clk      *clocktesting.FakeClock
	cp       *kwok.CloudProvider
	ctrl     *lifecycle.Controller
	recorder *record.FakeRecorder
}

// setup empties the cluster, creates a Ready KWOKNodeClass "default" with no
// registration delay, and returns the lifecycle controller over the KWOK
// provider on a fake clock.
func setup(t *testing.T) *fixture { return setupB(t) }

func setupB(t testing.TB) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{}, &kwokv1alpha1.KWOKNodeClassList{})
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	catalog = append(catalog, gpuInstanceType())
	clk := clocktesting.NewFakeClock(time.Now())
	cp := kwok.New(ctx, e.Client, clk, catalog)
	rec := record.NewFakeRecorder(100)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{})
	ExpectApplied(ctx, t, e.Client, nodeClass("default", 0, true), nodePool("default"))
	return &fixture{ctx: ctx, clk: clk, cp: cp, ctrl: lifecycle.NewController(e.Client, cp, clk, rec), recorder: rec}
}

var nodeClass = fixtures.KWOKNodeClass

// nodeClaim is a NodeClaim of NodePool "default" and the KWOKNodeClass
// nodeClassName for 1 cpu, labelled, annotated, tainted and startup-tainted
// for the tests to find those on its node, requiring reqs (linux when none).
func nodeClaim(name, nodeClassName string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	opts := []fixtures.NodeClaimOption{
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", "team": "a"}),
		fixtures.WithAnnotations(map[string]string{"example.com/owner": "me"}),
		fixtures.WithTaints(corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithStartupTaints(corev1.Taint{Key: "example.com/booting", Effect: corev1.TaintEffectNoSchedule}),
		fixtures.WithRequests("cpu", "1"),
		fixtures.WithNodeClass(nodeClassName),
	}
	if len(reqs) > 0 {
		opts = append(opts, fixtures.WithRequirements(reqs...))
	}
	return fixtures.NodeClaim(name, opts...)
}

func nodeOf(nc *v1.NodeClaim) *corev1.Node { return fixtures.Node(nc.Name) }

// makeReady plays kubelet and node lifecycle controller: Ready=True and the
// not-ready taint (added by the API server's admission on creation) removed.
func makeReady(f *fixture, t *testing.T, node *corev1.Node) *corev1.Node {
	t.Helper()
	node = ExpectExists(f.ctx, t, e.Client, node)
	var taints []corev1.Taint
	for _, tn := range node.Spec.Taints {
		if tn.Key != corev1.TaintNodeNotReady {
			taints = append(taints, tn)
		}
	}
	node.Spec.Taints = taints
	if err := e.Client.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	return node
}

func removeTaint(f *fixture, t *testing.T, node *corev1.Node, key string) {
	t.Helper()
	node = ExpectExists(f.ctx, t, e.Client, node)
	var taints []corev1.Taint
	for _, tn := range node.Spec.Taints {
		if tn.Key != key {
			taints = append(taints, tn)
		}
	}
	node.Spec.Taints = taints
	if err := e.Client.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
}

func condition(nc *v1.NodeClaim, t string) *status.Condition { return nc.StatusConditions().Get(t) }

func hasTaintKey(node *corev1.Node, key string) bool {
	for _, tn := range node.Spec.Taints {
		if tn.Key == key {
			return true
		}
	}
	return false
}

func metav1ObjectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// gpuInstanceType is the one catalog entry with an extended resource.
func gpuInstanceType() kwok.InstanceTypeOptions {
	return kwok.InstanceTypeOptions{
		Name:             "g-4x-amd64-linux",
		Architecture:     "amd64",
		OperatingSystems: []corev1.OSName{corev1.Linux},
		Resources: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("64"),
			"example.com/gpu":     resource.MustParse("1"),
		},
		Offerings: []kwok.OfferingOptions{{Price: 1, Available: true, Requirements: []corev1.NodeSelectorRequirement{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-a"}},
		}}},
	}
}

func nodePool(name string) *v1.NodePool { return fixtures.NodePool(name) }

// histogram reads a histogram series' sample count and sum.
func histogram(t *testing.T, o prometheus.Observer) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// createdInPool sums karpenter_nodes_created_total over the zones of one
// NodePool.
func createdInPool(t *testing.T, pool string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { karpentermetrics.NodesCreatedTotal.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == karpentermetrics.LabelNodePool && l.GetValue() == pool {
				sum += d.GetCounter().GetValue()
			}
		}
	}
	return sum
}
