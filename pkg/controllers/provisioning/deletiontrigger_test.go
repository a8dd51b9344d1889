package provisioning_test

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// deletingCapacity applies a launched NodeClaim with its registered Node and
// a pod running there, then deletes the NodeClaim (its finalizer holds it,
// as the termination controller would while it drains).
func deletingCapacity(t *testing.T, f *fixture) (*v1.NodeClaim, *corev1.Pod) {
	t.Helper()
	labels := fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", v1.NodeInitializedLabelKey: "true"})
	providerID := fixtures.WithProviderID("test:///interrupted")
	nc := fixtures.NodeClaim("interrupted", labels, providerID, fixtures.WithFinalizers(v1.TerminationFinalizer),
		fixtures.WithRequirements(fixtures.Requirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default")),
		fixtures.WithNodeName("interrupted"))
	resources := fixtures.ResourceList("cpu", "4", "pods", "10")
	node := fixtures.Node("interrupted", labels, providerID, fixtures.WithAllocatable(resources), fixtures.WithCapacity(resources))
	pod := pendingPod("running-there", "1")
	pod.Spec.NodeName = node.Name
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	ExpectApplied(f.ctx, t, testEnv.Client, nc, node, pod)
	ExpectDeleted(f.ctx, t, testEnv.Client, nc)
	return ExpectExists(f.ctx, t, testEnv.Client, nc), pod
}

// The pods of a node whose NodeClaim is being deleted (an interruption
// message, kubectl delete nodeclaim) get new capacity while they still run
// there, before the drain evicts them.
func TestPodsOnDeletingNodeClaimAreProvisionedFor(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	nc, pod := deletingCapacity(t, f)
	if nc.DeletionTimestamp == nil {
		t.Fatal("nodeclaim not being deleted")
	}
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 {
		t.Fatalf("%d nodeclaims launched for the pod of the deleting node, want 1 (errors %v)", len(res.NodeClaims), res.Solve.PodErrors)
	}
	if len(res.Solve.NewClaims) != 1 || len(res.Solve.NewClaims[0].Pods) != 1 || res.Solve.NewClaims[0].Pods[0].Name != pod.Name {
		t.Fatalf("the replacement is not for pod %s: %+v", pod.Name, res.Solve.NewClaims)
	}
}

// A NodeClaim starting to be deleted opens a provisioning batch by itself: no
// pod is pending yet, so nothing else would.
func TestDeletionTriggerOpensABatch(t *testing.T) {
	f := newFixture(t)
	b := provisioning.NewBatcher(f.clock, time.Second, 10*time.Second)
	trigger := provisioning.NewDeletionTrigger(b)
	nc, _ := deletingCapacity(t, f)
	trigger.Observe(nc)
	done := make(chan bool, 1)
	go func() { done <- b.Wait(f.ctx) }()
	Eventually(t, 5*time.Second, func() error {
		if !f.clock.HasWaiters() {
			return errors.New("batch window not open")
		}
		return nil
	})
	f.clock.Step(time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the deleting nodeclaim did not open a batch")
	}
}
