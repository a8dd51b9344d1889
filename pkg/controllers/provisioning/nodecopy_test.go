package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// Registration patches the Node (registered and initialized labels, the
// unregistered taint lifted) and then writes the NodeClaim's Registered and
// Initialized conditions. State learns of the two through different watches;
// on a busy cluster the NodeClaim's update arrives while state still holds the
// Node as it was launched. The next decision must still count the node as the
// room of the pod it was launched for (kube-scheduler binds the pod there), not
// take its launch-time boot taint for a taint in force and launch again.
func TestNodeClaimInitializedBeforeStateSeesItsNodeRegisteredLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	ExpectApplied(f.ctx, t, testEnv.Client, pendingPod("first", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 {
		t.Fatalf("want 1 NodeClaim for the pod, got %d", len(res.NodeClaims))
	}
	name := res.NodeClaims[0].Name

	// Launched: the instance runs and its Node exists, not registered yet.
	resources := fixtures.ResourceList("cpu", "2", "pods", "10")
	nc := ExpectExists(f.ctx, t, testEnv.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
	nc.Status.ProviderID = "kwok://" + name
	nc.Status.Allocatable, nc.Status.Capacity = resources, resources
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	node := fixtures.Node(name,
		fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelHostname: name}),
		fixtures.WithTaints(v1.UnregisteredNoExecuteTaint), fixtures.WithProviderID("kwok://"+name),
		fixtures.WithAllocatable(resources), fixtures.WithCapacity(resources), fixtures.NodeReady())
	ExpectApplied(f.ctx, t, testEnv.Client, node)
	f.sync(t)

	// Registered and initialized at the API server; state has seen the
	// NodeClaim's update but not yet the Node's.
	node = ExpectExists(f.ctx, t, testEnv.Client, node)
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Labels[v1.NodeInitializedLabelKey] = "true"
	node.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}}
	ExpectApplied(f.ctx, t, testEnv.Client, node)
	nc = ExpectExists(f.ctx, t, testEnv.Client, nc)
	nc.Status.NodeName = name
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, f.informers[1], nc)

	res, err := f.provisioner.Schedule(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d NodeClaim(s) more for a pod whose node just registered", len(res.NodeClaims))
	}
	if len(res.Solve.ExistingNodes) != 1 || res.Solve.ExistingNodes[0].Node.Name != name {
		t.Fatalf("the pod was not placed on its registered node %s: %d placements, errors %v", name, len(res.Solve.ExistingNodes), res.Solve.PodErrors)
	}
}
