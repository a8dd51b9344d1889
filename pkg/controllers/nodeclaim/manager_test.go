package nodeclaim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestControllersUnderAManager wires every controller of this half of the
// system into a real controller-runtime manager (cached client, watches,
// leader-election-less) and follows one NodeClaim from creation to a Ready
// node and back, with no test code calling Reconcile: the watches and
// mappings must bring each controller back at the right time.
func TestControllersUnderAManager(t *testing.T) {
	e := env.StartT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mgr := env.NewManager(t, e.Config, e.Scheme)
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	cp := instrumented.Decorate(kwok.New(ctx, mgr.GetClient(), clk, catalog))
	if err := controllers.RegisterEach(ctx, mgr, controllers.NodeLifecycle(mgr.GetClient(), cp, clk, mgr.GetEventRecorderFor("karpenter"))...); err != nil { //nolint:staticcheck
		t.Fatal(err)
	}
	if err := controllers.RegisterEach(ctx, mgr, controllers.NodePools(mgr.GetClient(), cp, clk, false)...); err != nil {
		t.Fatal(err)
	}
	if err := kwok.NewNodeClassController(mgr.GetClient(), clk).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	// A NodeClass without status: the readiness controller makes it Ready,
	// and the NodePool's NodeClassReady follows.
	// Plain creates: running controllers write status concurrently, which an
	// apply-with-status would race with.
	create(ctx, t, e, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}},
	}
	create(ctx, t, e, np)
	Eventually(t, 30*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, np)
		if !got.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("NodePool not Ready: %v", got.Status.Conditions)
		}
		if got.Annotations[v1.NodePoolHashAnnotationKey] == "" {
			return errors.New("no hash annotation")
		}
		return nil
	})

	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		},
	}
	create(ctx, t, e, nc)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
	Eventually(t, 30*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, nc)
		if !got.StatusConditions().Get(v1.ConditionTypeRegistered).IsTrue() {
			return fmt.Errorf("not registered: %v", got.Status.Conditions)
		}
		return nil
	})
	// Play KWOK: the node becomes Ready. The Node watch brings the lifecycle
	// controller back to initialize it.
	node = ExpectExists(ctx, t, e.Client, node)
	var taints []corev1.Taint
	for _, tn := range node.Spec.Taints {
		if tn.Key != corev1.TaintNodeNotReady {
			taints = append(taints, tn)
		}
	}
	node.Spec.Taints = taints
	if err := e.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	ExpectStatusUpdated(ctx, t, e.Client, node)
	Eventually(t, 30*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, nc)
		if !got.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("NodeClaim not Ready: %v", got.Status.Conditions)
		}
		pool := ExpectExists(ctx, t, e.Client, np)
		nodes, cpu := pool.Status.Resources["nodes"], pool.Status.Resources[corev1.ResourceCPU]
		if nodes.Value() != 1 || cpu.Value() < 4 {
			return fmt.Errorf("NodePool resources %v", pool.Status.Resources)
		}
		return nil
	})

	// kubectl delete node: the NodeClaim goes, the instance goes, nothing is left.
	ExpectDeleted(ctx, t, e.Client, node)
	Eventually(t, 30*time.Second, func() error {
		if err := e.Client.Get(ctx, keyOf(nc.Name), &v1.NodeClaim{}); err == nil {
			return errors.New("NodeClaim still exists")
		}
		if err := e.Client.Get(ctx, keyOf(node.Name), &corev1.Node{}); err == nil {
			return errors.New("Node still exists")
		}
		pool := ExpectExists(ctx, t, e.Client, np)
		if n := pool.Status.Resources["nodes"]; n.Value() != 0 {
			return fmt.Errorf("NodePool still counts %d nodes", n.Value())
		}
		return nil
	})
}
