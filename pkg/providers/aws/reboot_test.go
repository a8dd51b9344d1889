package aws_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/reboot"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// rebootWorld launches one instance through the emulator (over HTTP), waits
// for its Node to join the API server, makes it Ready as KWOK would and
// stores its NodeClaim registered and initialized. The Node has a
// reboot-clearable GPU fault (XID 48) since it joined.
func rebootWorld(t *testing.T) (context.Context, *aws.CloudProvider, *launchtest.Env, *v1.NodeClaim, *corev1.Node) {
	t.Helper()
	ctx, _, env, nc := launchSetup(t)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	t.Cleanup(func() {
		ncs := &v1.NodeClaimList{}
		_ = e.Client.List(context.Background(), ncs)
		for i := range ncs.Items {
			ExpectFinalizersRemoved(context.Background(), t, e.Client, &ncs.Items[i])
		}
		ExpectCleanedUp(context.Background(), t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	})
	if err := env.Emulator.RegisterNodesTo(e.Config); err != nil {
		t.Fatal(err)
	}
	cp := aws.New(e.Client, env.InstanceTypes, aws.WithInstances(env.Instances, env.ClusterName), aws.WithRebootForRepair(true))
	claim := launchtest.NodeClaim("default-reboot", nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large", "m5.xlarge")
	launched, err := cp.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	Eventually(t, 30*time.Second, func() error {
		nodes := &corev1.NodeList{}
		if err := e.Client.List(ctx, nodes); err != nil {
			return err
		}
		for i := range nodes.Items {
			if nodes.Items[i].Spec.ProviderID == launched.Status.ProviderID {
				node = &nodes.Items[i]
				return nil
			}
		}
		return fmt.Errorf("no node for %s yet (registration errors %v)", launched.Status.ProviderID, env.Emulator.RegistrationErrors())
	})
	if node.Status.NodeInfo.BootID == "" {
		t.Fatal("the emulator registered the node without a boot ID")
	}
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.Now()},
		{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID48Error", LastTransitionTime: node.CreationTimestamp},
	}
	ExpectStatusUpdated(ctx, t, e.Client, node)

	stored := claim.DeepCopy()
	stored.Labels, stored.Annotations, stored.Status = launched.Labels, launched.Annotations, launched.Status
	stored.Finalizers = []string{v1.TerminationFinalizer}
	stored.Status.NodeName = node.Name
	ExpectApplied(ctx, t, e.Client, stored)
	conds := stored.StatusConditions()
	conds.Now = env.Clock.Now
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		conds.SetTrue(c)
	}
	stored.Status.NodeName, stored.Status.ProviderID = node.Name, launched.Status.ProviderID
	ExpectStatusUpdated(ctx, t, e.Client, stored)
	return ctx, cp, env, stored, node
}

// requestReboot decides over the node with the AWS provider's repair
// policies and, the decision being a reboot, requests it as repair does.
func requestReboot(t *testing.T, ctx context.Context, cp *aws.CloudProvider, env *launchtest.Env, nc *v1.NodeClaim, node *corev1.Node) {
	t.Helper()
	nc = ExpectExists(ctx, t, e.Client, nc.DeepCopy())
	node = ExpectExists(ctx, t, e.Client, node.DeepCopy())
	// The toleration counts from the Node's creation at the earliest.
	env.Clock.SetTime(node.CreationTimestamp.Add(11 * time.Minute))
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	in := &disruption.Input{
		Now: env.Clock.Now(),
		Nodes: []*disruption.Node{{Name: node.Name, Node: node, NodeClaim: nc, NodePool: "default", Initialized: true,
			Existing: &scheduling.ExistingNode{Name: node.Name, Labels: node.Labels, Allocatable: node.Status.Allocatable, Initialized: true, NodePool: "default"}}},
		NodePools:      []*disruption.NodePool{{NodePool: np}},
		RepairPolicies: cp.RepairPolicies(),
		Options:        disruption.Options{NodeRepair: true},
	}
	r := disruption.Run(in)
	d := r.Decision
	if d == nil || !d.Reboot || d.Repair.Condition != "AcceleratedHardwareReady" || *d.Repair.TerminationGracePeriod != 5*time.Minute {
		t.Fatalf("want a reboot for the XID 48 fault with a 5m drain bound, got %+v (%+v)", d, r.Explanations)
	}
	stored := nc.DeepCopy()
	nc.Annotations = map[string]string{v1.RebootTerminationGracePeriodAnnotationKey: d.Repair.TerminationGracePeriod.String()}
	if err := e.Client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	stored = nc.DeepCopy()
	conds := nc.StatusConditions()
	conds.Now = env.Clock.Now
	conds.SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonRequested, d.Explanation)
	if err := e.Client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

func rebootController(env *launchtest.Env, cp cloudprovider.CloudProvider) *reboot.Controller {
	return reboot.NewController(e.Client, cp, termination.NewController(e.Client, cp, env.Clock, nil).Drainer, env.Clock, nil)
}

func reconcileReboot(t *testing.T, ctx context.Context, c *reboot.Controller, nc *v1.NodeClaim) {
	t.Helper()
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
}

func instanceOf(t *testing.T, env *launchtest.Env, providerID string) awsemulator.Instance {
	t.Helper()
	for _, in := range env.Emulator.Instances() {
		if "aws:///"+in.Zone+"/"+in.ID == providerID {
			return in
		}
	}
	t.Fatalf("no instance for %s", providerID)
	return awsemulator.Instance{}
}

func rebootingReason(t *testing.T, ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, string) {
	t.Helper()
	got := ExpectExists(ctx, t, e.Client, nc.DeepCopy())
	c := got.StatusConditions().Get(v1.ConditionTypeRebooting)
	if c == nil {
		return got, ""
	}
	return got, string(c.Status) + "/" + c.Reason
}

// With RebootForRepair, a reboot-clearable GPU fault is repaired by
// rebooting: the reboot controller calls ec2:RebootInstances (the emulator
// boots the instance again and its Node reports a new boot ID), and the node
// heals in place: same instance, same NodeClaim, not deleted.
func TestRebootRepairHealsThroughRebootInstances(t *testing.T) {
	ctx, cp, env, nc, node := rebootWorld(t)
	before := instanceOf(t, env, nc.Status.ProviderID)
	bootID := node.Status.NodeInfo.BootID
	requestReboot(t, ctx, cp, env, nc, node)
	rc := rebootController(env, cp)
	reconcileReboot(t, ctx, rc, nc) // taint, drain (nothing), wait the minimum drain time
	env.Clock.Step(reboot.MinDrainTime)
	reconcileReboot(t, ctx, rc, nc)
	if in := instanceOf(t, env, nc.Status.ProviderID); in.Boots != before.Boots+1 || in.State != "running" {
		t.Fatalf("instance %s: %d boots (was %d), %s: RebootInstances did not reboot it", in.ID, in.Boots, before.Boots, in.State)
	}
	if _, r := rebootingReason(t, ctx, nc); r != "True/"+v1.RebootReasonIssued {
		t.Fatalf("Rebooting %s, want True/RebootIssued", r)
	}
	Eventually(t, 30*time.Second, func() error {
		n := ExpectExists(ctx, t, e.Client, node.DeepCopy())
		if n.Status.NodeInfo.BootID == bootID {
			return fmt.Errorf("boot ID still %s", bootID)
		}
		return nil
	})
	reconcileReboot(t, ctx, rc, nc)
	got, r := rebootingReason(t, ctx, nc)
	if r != "False/"+v1.RebootReasonSucceeded || got.DeletionTimestamp != nil {
		t.Fatalf("Rebooting %s, deleted %v: want the node healed in place", r, got.DeletionTimestamp != nil)
	}
	for _, taint := range ExpectExists(ctx, t, e.Client, node.DeepCopy()).Spec.Taints {
		if taint.Key == v1.RebootingTaintKey {
			t.Fatalf("the %s taint outlived the reboot", v1.RebootingTaintKey)
		}
	}
	if n := len(env.Emulator.Instances()); n != 1 {
		t.Fatalf("%d instances: a reboot launches nothing", n)
	}
}

// A reboot EC2 accepts but the instance never comes back from (the Node
// keeps its boot ID) ends after the observation window: the NodeClaim is
// deleted, so the node is replaced.
func TestRebootRepairThatDoesNotHealReplaces(t *testing.T) {
	ctx, cp, env, nc, node := rebootWorld(t)
	in := instanceOf(t, env, nc.Status.ProviderID)
	if err := env.Emulator.SetRebootHangs(in.ID, true); err != nil {
		t.Fatal(err)
	}
	timeouts := reboot.RebootsTotal.WithLabelValues(reboot.ResultRecoveryTimeout)
	before := testutil.ToFloat64(timeouts)
	requestReboot(t, ctx, cp, env, nc, node)
	rc := rebootController(env, cp)
	reconcileReboot(t, ctx, rc, nc)
	env.Clock.Step(reboot.MinDrainTime)
	reconcileReboot(t, ctx, rc, nc)
	if _, r := rebootingReason(t, ctx, nc); r != "True/"+v1.RebootReasonIssued {
		t.Fatalf("Rebooting %s, want True/RebootIssued", r)
	}
	env.Clock.Step(reboot.ObservationWindow + time.Second)
	reconcileReboot(t, ctx, rc, nc)
	if got := ExpectExists(ctx, t, e.Client, nc.DeepCopy()); got.DeletionTimestamp == nil {
		t.Fatal("a node that did not come back from its reboot was not replaced")
	}
	if after := testutil.ToFloat64(timeouts); after != before+1 {
		t.Fatalf("nodes_reboots_total{recovery_timeout} %v -> %v", before, after)
	}
	if got := instanceOf(t, env, nc.Status.ProviderID); got.Boots != in.Boots {
		t.Fatalf("boots %d -> %d: the hung reboot came back", in.Boots, got.Boots)
	}
}

// The shipped IAM policy, like upstream's, does not grant
// ec2:RebootInstances (RebootForRepair needs it added): the provider's reboot
// is refused as a failure retrying cannot fix.
func TestRebootDeniedByTheShippedPolicy(t *testing.T) {
	ctx, cp, env, nc, _ := rebootWorld(t)
	doc, err := os.ReadFile("../../../docs/aws/controller-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Emulator.SetPolicy(env.Emulator.RenderPolicy(string(doc), nil)); err != nil {
		t.Fatal(err)
	}
	if err := cp.Reboot(ctx, nc, "op"); !cloudprovider.IsNodeRebootFailedError(err) {
		t.Fatalf("Reboot under the shipped policy: %v, want a NodeRebootFailedError", err)
	}
	denied := false
	for _, d := range env.Emulator.Denials() {
		denied = denied || d.Permission == "ec2:RebootInstances"
	}
	if !denied {
		t.Fatalf("denials %v do not name ec2:RebootInstances", env.Emulator.Denials())
	}
}

// Only the reboot-clearable GPU faults' policy reboots, and only with the
// RebootForRepair gate; without it the same policy replaces, on the same
// timing.
func TestRebootForRepairGateSwitchesThePolicy(t *testing.T) {
	for _, gate := range []bool{false, true} {
		var reboots []cloudprovider.RepairPolicy
		for _, p := range aws.New(nil, nil, aws.WithRebootForRepair(gate)).RepairPolicies() {
			if p.Action == cloudprovider.RebootNode {
				reboots = append(reboots, p)
			}
		}
		switch {
		case !gate && len(reboots) != 0:
			t.Fatalf("without the gate %d policies reboot", len(reboots))
		case gate && (len(reboots) != 1 || reboots[0].ConditionType != "AcceleratedHardwareReady" || reboots[0].TolerationDuration != 10*time.Minute ||
			*reboots[0].TerminationGracePeriod != 5*time.Minute):
			t.Fatalf("with the gate, rebooting policies %+v, want the reboot-clearable XIDs' only", reboots)
		}
		if err := disruption.ValidateRepairPolicies(aws.New(nil, nil, aws.WithRebootForRepair(gate)).RepairPolicies()); err != nil {
			t.Fatalf("gate %v: %v", gate, err)
		}
	}
}
