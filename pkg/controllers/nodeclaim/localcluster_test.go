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
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// TestKWOKNodesInitializeInTheLocalCluster launches NodeClaims through the
// KWOK provider in the local cluster, where the real KWOK controller plays
// kubelet and kube-controller-manager lifts the not-ready taint: the nodes
// must become Ready and the NodeClaims Initialized with no help from the
// test, and deleting a NodeClaim must remove its node.
func TestKWOKNodesInitializeInTheLocalCluster(t *testing.T) {
	c := localcluster.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := kit.InstallCRDs(ctx, c.Client); err != nil {
		t.Fatal(err)
	}

	mgr := env.NewManager(t, c.Config, c.Scheme)
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	cp := instrumented.Decorate(kwok.New(ctx, mgr.GetClient(), clock.RealClock{}, catalog))
	if err := controllers.RegisterEach(ctx, mgr, controllers.NodeLifecycle(mgr.GetClient(), cp, clock.RealClock{}, nil)...); err != nil {
		t.Fatal(err)
	}
	if err := kwok.NewNodeClassController(mgr.GetClient(), clock.RealClock{}).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	if err := c.Client.Create(ctx, &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: metav1.Duration{Duration: 2 * time.Second}},
	}); err != nil {
		t.Fatal(err)
	}
	var claims []*v1.NodeClaim
	for i := range 3 {
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i), Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec: v1.NodeClaimSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
				Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
			},
		}
		if err := c.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		claims = append(claims, nc)
	}
	start := time.Now()
	Eventually(t, 2*time.Minute, func() error {
		for _, nc := range claims {
			got := &v1.NodeClaim{}
			if err := c.Client.Get(ctx, keyOf(nc.Name), got); err != nil {
				return err
			}
			if !got.StatusConditions().Root().IsTrue() {
				return fmt.Errorf("%s not Ready: %v", nc.Name, got.Status.Conditions)
			}
		}
		return nil
	})
	t.Logf("3 NodeClaims launched, registered and initialized in %s (2s registration delay)", time.Since(start).Round(time.Millisecond))
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, keyOf(claims[0].Name), node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1.NodeInitializedLabelKey] != "true" || node.Labels[v1.NodeRegisteredLabelKey] != "true" {
		t.Fatalf("node labels %v", node.Labels)
	}

	if err := c.Client.Delete(ctx, claims[0]); err != nil {
		t.Fatal(err)
	}
	Eventually(t, time.Minute, func() error {
		if err := c.Client.Get(ctx, keyOf(claims[0].Name), &corev1.Node{}); err == nil {
			return errors.New("node still exists")
		}
		if err := c.Client.Get(ctx, keyOf(claims[0].Name), &v1.NodeClaim{}); err == nil {
			return errors.New("NodeClaim still exists")
		}
		return nil
	})
}
