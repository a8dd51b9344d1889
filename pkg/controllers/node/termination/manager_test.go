package termination_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// Wired as in the controller binary (controllers.NodeLifecycle) under a real
// manager, with no test code calling Reconcile: `kubectl delete node` and
// `kubectl delete nodeclaim` each end with the pods evicted, the node, the
// NodeClaim and the instance gone. Watches (pods leaving, the Node going)
// must bring the controllers back at the right time.
func TestNodeAndNodeClaimDeletionUnderAManager(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cleanup(ctx, t)
	t.Cleanup(func() { cleanup(context.Background(), t) })
	mgr := env.NewManager(t, e.Config, e.Scheme)
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	// Real time: the manager's requeues and the queue's backoff run on it.
	clk := clock.RealClock{}
	cp := kwok.New(ctx, mgr.GetClient(), clk, catalog)
	if err := controllers.RegisterEach(ctx, mgr, controllers.NodeLifecycle(mgr.GetClient(), cp, clk, mgr.GetEventRecorderFor("karpenter"))...); err != nil { //nolint:staticcheck // the controllers take a record.EventRecorder
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	ExpectApplied(ctx, t, e.Client, nodeClass(), nodePool())

	f := &fixture{ctx: ctx}
	nodes := map[string]*corev1.Node{}
	pods := map[string][]*corev1.Pod{}
	for _, name := range []string{"by-node", "by-claim"} {
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec: v1.NodeClaimSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
				Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
			},
		}
		if err := e.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		// Play KWOK's kubelet: the registered node reports Ready.
		Eventually(t, 30*time.Second, func() error {
			got := &v1.NodeClaim{}
			if err := e.Client.Get(ctx, keyOf(name), got); err != nil {
				return err
			}
			if !got.StatusConditions().Get(v1.ConditionTypeRegistered).IsTrue() {
				return fmt.Errorf("%s not registered", name)
			}
			if err := e.Client.Get(ctx, keyOf(name), node); err != nil {
				return err
			}
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			return e.Client.Status().Update(ctx, node)
		})
		nodes[name] = node
		pods[name] = []*corev1.Pod{f.pod(t, name+"-web", node), f.pod(t, name+"-logs", node, daemon)}
	}

	allGone := func(name string) func() error {
		return func() error {
			for _, o := range append([]*corev1.Pod{}, pods[name]...) {
				if !gone(ctx, t, o) {
					return fmt.Errorf("pod %s still exists", o.Name)
				}
			}
			if !gone(ctx, t, nodes[name]) {
				return fmt.Errorf("node %s still exists", name)
			}
			if !gone(ctx, t, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}) {
				return fmt.Errorf("nodeclaim %s still exists", name)
			}
			list, err := cp.List(ctx)
			if err != nil {
				return err
			}
			for _, inst := range list {
				if inst.Name == name {
					return fmt.Errorf("instance of %s still listed", name)
				}
			}
			return nil
		}
	}
	ExpectDeleted(ctx, t, e.Client, nodes["by-node"]) // kubectl delete node
	Eventually(t, 30*time.Second, allGone("by-node"))
	ExpectDeleted(ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "by-claim"}}) // kubectl delete nodeclaim
	Eventually(t, 30*time.Second, allGone("by-claim"))
}
