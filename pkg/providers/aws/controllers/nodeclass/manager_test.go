package nodeclass_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// The controller registered with a manager, as cmd/karpenter runs it: watches
// drive it to Ready, and the finalizer holds a deleted class until the
// NodeClaims using it are gone, then deletes its instance profile.
func TestManagerFinalizerWaitsForNodeClaims(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &karpv1.NodeClaimList{}, &v1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	mgr := env.NewManager(t, e.Config, e.Scheme)
	c := newController(mgr.GetClient(), clock.RealClock{}, mgr.GetEventRecorderFor("karpenter"), defaultOptions(), awstest.Config(em), e.KubeClient.Discovery()) //nolint:staticcheck // the controller takes a record.EventRecorder
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	nc := newNodeClass("in-use")
	ExpectApplied(ctx, t, e.Client, nc)
	Eventually(t, 30*time.Second, func() error {
		cur := ExpectExists(ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
		if !cur.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("not ready:\n%s", conditionSummary(cur))
		}
		return nil
	})
	if len(em.InstanceProfiles()) != 1 {
		t.Fatalf("profiles %+v", em.InstanceProfiles())
	}

	claims := []*karpv1.NodeClaim{nodeClaim("claim-b", nc.Name), nodeClaim("claim-a", nc.Name)}
	other := nodeClaim("kwok-claim", nc.Name)
	other.Spec.NodeClassRef.Group, other.Spec.NodeClassRef.Kind = "karpenter.kwok.sh", "KWOKNodeClass"
	for _, cl := range append(claims, other) {
		ExpectApplied(ctx, t, e.Client, cl)
	}
	// The controller reads NodeClaims from the manager's cache: let it see them first.
	Eventually(t, 30*time.Second, func() error {
		list := &karpv1.NodeClaimList{}
		if err := mgr.GetClient().List(ctx, list); err != nil {
			return err
		}
		if len(list.Items) != 3 {
			return fmt.Errorf("cache holds %d NodeClaims", len(list.Items))
		}
		return nil
	})
	ExpectDeleted(ctx, t, e.Client, nc)
	Eventually(t, 30*time.Second, func() error {
		events := &corev1.EventList{}
		if err := e.Client.List(ctx, events, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == nc.Name && ev.Reason == nodeclass.EventWaitingOnNodeClaimTermination {
				if ev.Message != "Waiting on NodeClaim termination for claim-a, claim-b" {
					return fmt.Errorf("event message %q", ev.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", nodeclass.EventWaitingOnNodeClaimTermination, len(events.Items))
	})
	ExpectExists(ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if len(em.InstanceProfiles()) != 1 {
		t.Error("the instance profile must stay while NodeClaims use the class")
	}

	// The NodeClaims go (a KWOK one never held the class): the class and its profile follow.
	ExpectDeleted(ctx, t, e.Client, claims[0], claims[1])
	Eventually(t, 30*time.Second, func() error {
		cur := &v1.EC2NodeClass{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(nc), cur); err == nil {
			return fmt.Errorf("still there, finalizers %v", cur.Finalizers)
		}
		return nil
	})
	if ps := em.InstanceProfiles(); len(ps) != 0 {
		t.Errorf("the managed instance profile must be deleted with the class: %+v", ps)
	}
	ExpectDeleted(ctx, t, e.Client, other)
}

func nodeClaim(name, nodeClass string) *karpv1.NodeClaim {
	return fixtures.NodeClaim(name, fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef(nodeClass)))
}

// BenchmarkReconcile measures one full EC2NodeClass reconcile against the
// emulator and a real API server: "cold" resolves everything through AWS
// (fresh caches, as after a restart or a refresh interval), "warm" is the
// steady state within the caches' lifetime.
func BenchmarkReconcile(b *testing.B) {
	for _, warm := range []bool{false, true} {
		name := map[bool]string{false: "cold", true: "warm"}[warm]
		b.Run(name, func(b *testing.B) {
			f := setup(b)
			nc := newNodeClass("bench")
			ExpectApplied(f.ctx, b, e.Client, nc)
			ExpectReconciled(f.ctx, b, f.c, nc)
			if cur := ExpectExists(f.ctx, b, e.Client, nc); !cur.StatusConditions().IsTrue(status.ConditionReady) {
				b.Fatalf("not ready: %s", conditionSummary(cur))
			}
			calls := sum(f.aws.AllCalls())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !warm {
					b.StopTimer()
					f.c = newController(e.Client, f.clk, nil, f.opts, awstest.Config(f.aws), e.KubeClient.Discovery())
					b.StartTimer()
				}
				ExpectReconciled(f.ctx, b, f.c, nc)
			}
			b.StopTimer()
			b.ReportMetric(float64(sum(f.aws.AllCalls())-calls)/float64(b.N), "aws-calls/op")
			if !strings.HasPrefix(name, "c") && sum(f.aws.AllCalls()) != calls {
				b.Errorf("warm reconciles called AWS %d times", sum(f.aws.AllCalls())-calls)
			}
		})
	}
}
