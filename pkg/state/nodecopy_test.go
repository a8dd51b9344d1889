package state_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// State's copies of a Node and of its NodeClaim come from two watches. The
// NodeClaim's Registered and Initialized are written after the Node's
// registration, yet on a busy cluster they can reach state first: the node's
// taints are then judged on the Node's own copy, never its old boot taints as
// if the node had finished starting.
func TestTaintsFollowTheNodesOwnCopy(t *testing.T) {
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()), nil)
	nc := nodeClaim("nc-lag")
	nc.Status.ProviderID = "kwok://nc-lag"
	nc.Status.NodeName = "nc-lag"
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	cluster.UpdateNodeClaim(nc)
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}

	taints := func() []corev1.Taint {
		t.Helper()
		in, err := cluster.Snapshot(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.ExistingNodes) != 1 || in.ExistingNodes[0].InFlight || !in.ExistingNodes[0].Initialized {
			t.Fatalf("want the node joined to its initialized claim, got %d existing nodes", len(in.ExistingNodes))
		}
		return in.ExistingNodes[0].Taints
	}
	keys := func(ts []corev1.Taint) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Key)
		}
		return out
	}

	// The Node as it was launched, before registration.
	n := node("nc-lag", "kwok://nc-lag", map[string]string{v1.NodePoolLabelKey: "default"})
	n.Spec.Taints = []corev1.Taint{v1.UnregisteredNoExecuteTaint, notReady}
	cluster.UpdateNode(n)
	if got := taints(); len(got) != 1 || got[0] != dedicated {
		t.Fatalf("taints of a Node not registered yet: %v, want the NodeClaim's (dedicated)", keys(got))
	}

	// Registered, not labeled initialized yet: its boot taints are on their way out.
	n = n.DeepCopy()
	n.Labels[v1.NodeRegisteredLabelKey] = "true"
	n.Spec.Taints = []corev1.Taint{notReady, dedicated}
	cluster.UpdateNode(n)
	if got := taints(); len(got) != 1 || got[0] != dedicated {
		t.Fatalf("taints of a registered Node not initialized yet: %v, want dedicated only", keys(got))
	}
	if len(n.Spec.Taints) != 2 {
		t.Fatal("the Node's own taints were modified")
	}

	// Initialized: the Node's taints are in force, a boot taint it gets again
	// (the node went NotReady) included.
	n = n.DeepCopy()
	n.Labels[v1.NodeInitializedLabelKey] = "true"
	cluster.UpdateNode(n)
	if got := taints(); len(got) != 2 || got[0] != notReady || got[1] != dedicated {
		t.Fatalf("taints of an initialized Node: %v, want its own", keys(got))
	}

	// The solver places a pod on the node whose copy is older than its claim.
	n = node("nc-lag", "kwok://nc-lag", map[string]string{v1.NodePoolLabelKey: "default"})
	n.Spec.Taints = []corev1.Taint{v1.UnregisteredNoExecuteTaint, notReady}
	cluster.UpdateNode(n)
	in, err := cluster.Snapshot(context.Background(), []*corev1.Pod{pod("p", "")})
	if err != nil {
		t.Fatal(err)
	}
	in.Pods[0].Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	res := scheduling.Solve(in)
	if len(res.ExistingNodes) != 1 || len(res.NewClaims) != 0 || len(res.PodErrors) != 0 {
		t.Fatalf("pod not placed on the registered node: %d existing, %d new claims, errors %v", len(res.ExistingNodes), len(res.NewClaims), res.PodErrors)
	}
}

// While its NodeClaim is rebooting, a node's karpenter.sh/rebooting taint is
// left out of what the solver sees (its capacity is coming back); once the
// reboot ended, a leftover taint counts again.
func TestRebootingTaintIsIgnoredWhileRebooting(t *testing.T) {
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()), nil)
	nc := nodeClaim("nc-reboot")
	nc.Status.ProviderID, nc.Status.NodeName = "kwok://nc-reboot", "nc-reboot"
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonRequested, "test")
	cluster.UpdateNodeClaim(nc)
	n := node("nc-reboot", "kwok://nc-reboot", map[string]string{v1.NodePoolLabelKey: "default", v1.NodeRegisteredLabelKey: "true", v1.NodeInitializedLabelKey: "true"})
	n.Spec.Taints = []corev1.Taint{v1.RebootingNoScheduleTaint}
	cluster.UpdateNode(n)
	sn := cluster.Nodes()[0]
	if !sn.Rebooting() || len(sn.Taints()) != 0 {
		t.Fatalf("rebooting %v, taints %v: want the reboot's taint ignored", sn.Rebooting(), sn.Taints())
	}
	if len(n.Spec.Taints) != 1 {
		t.Fatal("the Node's own taints were modified")
	}
	nc = nc.DeepCopy()
	nc.StatusConditions().SetFalse(v1.ConditionTypeRebooting, v1.RebootReasonSucceeded, "test")
	cluster.UpdateNodeClaim(nc)
	if sn := cluster.Nodes()[0]; sn.Rebooting() || len(sn.Taints()) != 1 {
		t.Fatalf("rebooting %v, taints %v: want the taint in force after the reboot", sn.Rebooting(), sn.Taints())
	}
}
