package legacy_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/state"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// replacerFixture adds a KWOK NodePool "default" (the successor of
// Provisioner "default", budget budget) and a Replacer over the real
// provisioner to the fixture.
func (f *fixture) replacer(t *testing.T, budget string) *legacy.Replacer {
	t.Helper()
	t.Cleanup(func() {
		// No kubelet here: bound pods go with grace period 0.
		pods := &corev1.PodList{}
		if err := e.Client.List(context.Background(), pods, client.InNamespace("default")); err != nil {
			t.Error(err)
		}
		for i := range pods.Items {
			if err := e.Client.Delete(context.Background(), &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		ExpectCleanedUp(context.Background(), t, e.Client, &corev1.PodList{}, &kwokv1alpha1.KWOKNodeClassList{})
	})
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{
		Disruption: v1.Disruption{Budgets: []v1.Budget{{Nodes: budget}}},
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		}},
	}}
	ExpectApplied(f.ctx, t, e.Client, fixtures.KWOKNodeClass("default", 0, true), np)
	cluster := state.NewCluster(f.clk, e.Client)
	cluster.UpdateNodePool(ExpectExists(f.ctx, t, e.Client, np))
	prov := provisioning.NewProvisioner(e.Client, f.cp, cluster, f.rec, f.clk, provisioning.Options{})
	return legacy.NewReplacer(e.Client, prov, cluster, f.clk, f.rec)
}

// drifted seeds a Machine of Provisioner default marked drifted, with a pod
// on its node; selector, when set, is the pod's nodeSelector.
func (f *fixture) drifted(t *testing.T, prov *v1alpha5.Provisioner, name string, selector map[string]string) (*v1alpha5.Machine, *corev1.Node) {
	t.Helper()
	m, node := f.seed(t, prov, name)
	m.Status.Conditions = []v1alpha5.Condition{{Type: legacy.ConditionDrifted, Status: corev1.ConditionTrue, Reason: legacy.ReasonProvisionerDrifted, LastTransitionTime: metav1.Now()}}
	ExpectStatusUpdated(f.ctx, t, e.Client, m)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node.Name, NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	ExpectApplied(f.ctx, t, e.Client, pod)
	return ExpectExists(f.ctx, t, e.Client, m), node
}

func nodeClaims(f *fixture, t *testing.T) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.Client.List(f.ctx, list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func disruptedTaint(n *corev1.Node) bool {
	for _, tn := range n.Spec.Taints {
		if tn.MatchTaint(&v1.DisruptedNoScheduleTaint) {
			return true
		}
	}
	return false
}

// TestReplacementFirst: a drifted Machine gets NodeClaims of the successor
// NodePool for its pods and its node is tainted; the Machine is deleted only
// once they are Initialized.
func TestReplacementFirst(t *testing.T) {
	f := setup(t)
	r := f.replacer(t, "10%")
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, node := f.drifted(t, prov, "default-r1", nil)

	if err := r.Reconcile(f.ctx); err != nil {
		t.Fatal(err)
	}
	claims := nodeClaims(f, t)
	if len(claims) != 1 || claims[0].Labels[v1.NodePoolLabelKey] != "default" {
		t.Fatalf("want one replacement NodeClaim of NodePool default, got %d", len(claims))
	}
	m = ExpectExists(f.ctx, t, e.Client, m)
	if m.Annotations[legacy.ReplacementsAnnotation] != claims[0].Name || m.DeletionTimestamp != nil {
		t.Fatalf("machine: annotation %q deleting %v, want %s and not deleting", m.Annotations[legacy.ReplacementsAnnotation], m.DeletionTimestamp, claims[0].Name)
	}
	if !disruptedTaint(ExpectExists(f.ctx, t, e.Client, node)) {
		t.Fatal("node not tainted karpenter.sh/disrupted before its replacement")
	}
	// Not initialized yet: nothing more, and no second replacement.
	if err := r.Reconcile(f.ctx); err != nil {
		t.Fatal(err)
	}
	if m = ExpectExists(f.ctx, t, e.Client, m); m.DeletionTimestamp != nil || len(nodeClaims(f, t)) != 1 {
		t.Fatalf("machine deleted before its replacement was initialized, or launched twice (%d claims)", len(nodeClaims(f, t)))
	}
	nc := &claims[0]
	nc.StatusConditions().Set(status.Condition{Type: v1.ConditionTypeInitialized, Status: "True", Reason: "Initialized"})
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	if err := r.Reconcile(f.ctx); err != nil {
		t.Fatal(err)
	}
	if m = ExpectExists(f.ctx, t, e.Client, m); m.DeletionTimestamp == nil {
		t.Fatal("machine not deleted once its replacement was initialized")
	}
}

// TestReplacementBlockedByProvisionerSelector: a pod selecting
// karpenter.sh/provisioner-name fits no NodePool, so nothing is launched, the
// node keeps running untainted and MachineDrifted says why.
func TestReplacementBlockedByProvisionerSelector(t *testing.T) {
	f := setup(t)
	r := f.replacer(t, "10%")
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, node := f.drifted(t, prov, "default-r2", map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"})
	if err := r.Reconcile(f.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(nodeClaims(f, t)); n != 0 {
		t.Fatalf("%d NodeClaims launched for a pod that fits no NodePool", n)
	}
	m = ExpectExists(f.ctx, t, e.Client, m)
	expectCondition(t, m, legacy.ConditionDrifted, corev1.ConditionTrue, legacy.ReasonReplacementBlocked, "default/web-default-r2")
	if m.DeletionTimestamp != nil || disruptedTaint(ExpectExists(f.ctx, t, e.Client, node)) {
		t.Fatal("a blocked machine was deleted or its node tainted")
	}
	// The Marker keeps the explanation while the Machine stays drifted.
	stored := prov.DeepCopy()
	prov.Spec.Taints = []corev1.Taint{legacyTaint}
	if err := e.Client.Patch(f.ctx, prov, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	ExpectReconciled(f.ctx, t, f.mark, m)
	c := ExpectExists(f.ctx, t, e.Client, m)
	expectCondition(t, c, legacy.ConditionDrifted, corev1.ConditionTrue, legacy.ReasonReplacementBlocked, "karpenter-convert report")
}

// TestReplacementWithinBudget: with a budget of one node, one of two drifted
// Machines is replaced at a time.
func TestReplacementWithinBudget(t *testing.T) {
	f := setup(t)
	r := f.replacer(t, "1")
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	a, _ := f.drifted(t, prov, "default-r3", nil)
	b, _ := f.drifted(t, prov, "default-r4", nil)
	if err := r.Reconcile(f.ctx); err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, m := range []*v1alpha5.Machine{a, b} {
		if ExpectExists(f.ctx, t, e.Client, m).Annotations[legacy.ReplacementsAnnotation] != "" {
			started++
		}
	}
	if started != 1 {
		var names []string
		for _, nc := range nodeClaims(f, t) {
			names = append(names, nc.Name)
		}
		t.Fatalf("%d replacements started with a budget of 1 (claims %s)", started, strings.Join(names, ","))
	}
}
