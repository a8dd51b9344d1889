package provisioning_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/staticcapacity"
	"github.com/karpenter-go/karpenter/pkg/state"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// readyStatic applies a static NodePool marked Ready.
func (f *fixture) readyStatic(t *testing.T, replicas int64, limitNodes string) *v1.NodePool {
	t.Helper()
	np := nodePool("static", "default")
	np.Spec.Replicas = ptr.To(replicas)
	if limitNodes != "" {
		np.Spec.Limits = v1.Limits{corev1.ResourceName("nodes"): resource.MustParse(limitNodes)}
	}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np)
	np = ExpectExists(f.ctx, t, testEnv.Client, np)
	np.StatusConditions().SetTrue(v1.ConditionTypeValidationSucceeded)
	np.StatusConditions().SetTrue(v1.ConditionTypeNodeClassReady)
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, np)
	return ExpectExists(f.ctx, t, testEnv.Client, np)
}

func (f *fixture) staticClaims(t *testing.T) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: "static"}); err != nil {
		t.Fatal(err)
	}
	var out []v1.NodeClaim
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

// A static NodePool gets its replicas as NodeClaims carrying its template
// (labels, annotations, taints, the cheapest admitted types first); a second
// reconcile creates nothing more; a higher count adds, a lower one deletes.
func TestStaticNodePoolKeepsItsReplicas(t *testing.T) {
	f := newFixture(t)
	np := f.readyStatic(t, 3, "")
	ctrl := staticcapacity.NewController(testEnv.Client, f.cluster, f.provisioner, f.clock)
	f.sync(t)
	ExpectReconciled(f.ctx, t, ctrl, np)
	claims := f.staticClaims(t)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims, want 3", len(claims))
	}
	nc := claims[0]
	if nc.Labels["team"] != "blue" || nc.Annotations["example.com/owner"] != "blue" || len(nc.Spec.Taints) != 1 || nc.Spec.Taints[0].Key != "example.com/dedicated" {
		t.Errorf("nodeclaim does not carry the template: labels %v annotations %v taints %v", nc.Labels, nc.Annotations, nc.Spec.Taints)
	}
	hasTypes := false
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) > 0 {
			hasTypes = true
		}
	}
	if !hasTypes {
		t.Errorf("nodeclaim requirements %v name no instance types", nc.Spec.Requirements)
	}
	// Cluster state already has them: no second launch.
	ExpectReconciled(f.ctx, t, ctrl, np)
	if n := len(f.staticClaims(t)); n != 3 {
		t.Fatalf("after a second reconcile %d nodeclaims, want 3", n)
	}

	np.Spec.Replicas = ptr.To[int64](5)
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	f.sync(t)
	ExpectReconciled(f.ctx, t, ctrl, np)
	if n := len(f.staticClaims(t)); n != 5 {
		t.Fatalf("after scaling to 5: %d nodeclaims", n)
	}

	np = ExpectExists(f.ctx, t, testEnv.Client, np)
	np.Spec.Replicas = ptr.To[int64](1)
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	f.sync(t)
	ExpectReconciled(f.ctx, t, ctrl, np)
	if n := len(f.staticClaims(t)); n != 1 {
		t.Fatalf("after scaling to 1: %d nodeclaims not being deleted", n)
	}
}

// limits.nodes caps a static NodePool below its replicas, counting every
// NodeClaim of the pool.
func TestStaticNodePoolRespectsItsNodeLimit(t *testing.T) {
	f := newFixture(t)
	np := f.readyStatic(t, 10, "4")
	ctrl := staticcapacity.NewController(testEnv.Client, f.cluster, f.provisioner, f.clock)
	f.sync(t)
	ExpectReconciled(f.ctx, t, ctrl, np)
	ExpectReconciled(f.ctx, t, ctrl, np)
	if n := len(f.staticClaims(t)); n != 4 {
		t.Fatalf("%d nodeclaims under limits.nodes 4, want 4", n)
	}
}

// Surplus removes NodeClaims not launched yet first, then empty nodes, then
// the least busy, and a node with a do-not-disrupt pod last.
func TestStaticSurplusOrder(t *testing.T) {
	f := newFixture(t)
	np := f.readyStatic(t, 4, "")
	ctrl := staticcapacity.NewController(testEnv.Client, f.cluster, f.provisioner, f.clock)
	f.sync(t)
	ExpectReconciled(f.ctx, t, ctrl, np)
	claims := f.staticClaims(t)
	if len(claims) != 4 {
		t.Fatalf("%d nodeclaims, want 4", len(claims))
	}
	// Three launched nodes: one busy, one with a do-not-disrupt pod, one empty;
	// the fourth NodeClaim is not launched.
	names := make([]string, 3)
	for i := 0; i < 3; i++ {
		nc := claims[i]
		node := fixtures.Node("node-"+nc.Name, fixtures.WithProviderID("kwok://"+nc.Name), fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "static"}))
		ExpectApplied(f.ctx, t, testEnv.Client, node)
		nc.Status.ProviderID = "kwok://" + nc.Name
		nc.Status.NodeName = node.Name
		ExpectStatusUpdated(f.ctx, t, testEnv.Client, &nc)
		names[i] = node.Name
	}
	busy := fixtures.Pod("busy-1", fixtures.OnNode(names[0]))
	busy2 := fixtures.Pod("busy-2", fixtures.OnNode(names[0]))
	protected := fixtures.Pod("protected", fixtures.OnNode(names[1]), fixtures.WithAnnotations(map[string]string{v1.DoNotDisruptAnnotationKey: "true"}))
	ExpectApplied(f.ctx, t, testEnv.Client, busy, busy2, protected)
	f.sync(t)

	var nodes []string
	for _, sn := range staticcapacity.Surplus(statesOf(f, "static"), 4, f.clock.Now()) {
		nodes = append(nodes, sn.Name())
	}
	want := []string{claims[3].Name, names[2], names[0], names[1]}
	if strings.Join(nodes, ",") != strings.Join(want, ",") {
		t.Errorf("removal order %v, want %v (unlaunched, empty, busy, do-not-disrupt)", nodes, want)
	}
}

func statesOf(f *fixture, pool string) []*state.StateNode {
	var out []*state.StateNode
	for _, sn := range f.cluster.Nodes() {
		if sn.NodeClaim != nil && sn.NodePool() == pool {
			out = append(out, sn)
		}
	}
	return out
}
