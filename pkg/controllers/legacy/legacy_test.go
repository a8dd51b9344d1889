package legacy_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestDeletedMachineIsDrainedAndTerminated: kubectl delete machine (or the
// garbage collector after kubectl delete provisioner) deletes its Node, the
// Node's finalizer drains it and terminates the instance by provider ID,
// and the Machine's finalizer goes last.
func TestDeletedMachineIsDrainedAndTerminated(t *testing.T) {
	f := setup(t)
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, node := f.seed(t, prov, "default-abc")
	ExpectDeleted(f.ctx, t, e.Client, m)

	ExpectReconciled(f.ctx, t, f.term, m)
	node = ExpectExists(f.ctx, t, e.Client, node)
	if node.DeletionTimestamp == nil {
		t.Fatal("the machine's node was not deleted")
	}
	if m = ExpectExists(f.ctx, t, e.Client, m); !slices.Contains(m.Finalizers, v1.TerminationFinalizer) {
		t.Fatal("the machine's finalizer went before its node")
	}
	f.finalize(t, m, node)
	if got := f.cp.deleted(); len(got) == 0 || got[0] != m.Status.ProviderID {
		t.Fatalf("instance deletes %v, want %s", got, m.Status.ProviderID)
	}
	if len(f.cp.live) != 0 {
		t.Fatalf("instance leaked: %v", f.cp.live)
	}
}

// TestDeletedNodeTakesItsMachine: kubectl delete node deletes the Machine
// too; both finalize and the instance is terminated.
func TestDeletedNodeTakesItsMachine(t *testing.T) {
	f := setup(t)
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, node := f.seed(t, prov, "default-def")
	ExpectDeleted(f.ctx, t, e.Client, node)
	ExpectReconciled(f.ctx, t, f.term, m)
	if m = ExpectExists(f.ctx, t, e.Client, m); m.DeletionTimestamp == nil {
		t.Fatal("the node's machine was not deleted")
	}
	f.finalize(t, m, node)
	if len(f.cp.live) != 0 {
		t.Fatalf("instance leaked: %v (deletes %v)", f.cp.live, f.cp.deleted())
	}
}

// TestMachineWithoutNodeOrInstance: a Machine whose Node never registered
// and whose instance is already gone is released at once.
func TestMachineWithoutNodeOrInstance(t *testing.T) {
	f := setup(t)
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, node := f.seed(t, prov, "default-ghi")
	ExpectCleanedUp(f.ctx, t, e.Client, &corev1.NodeList{})
	delete(f.cp.live, m.Status.ProviderID)
	ExpectDeleted(f.ctx, t, e.Client, m)
	f.finalize(t, m, node)
}

// TestMarker: Adopted names the successor NodePool (or its absence),
// MachineDrifted follows the Provisioner, and a Machine without the
// termination finalizer gets it.
func TestMarker(t *testing.T) {
	f := setup(t)
	prov := provisioner("default")
	ExpectApplied(f.ctx, t, e.Client, prov)
	m, _ := f.seed(t, prov, "default-jkl")
	m.Finalizers = nil
	ExpectApplied(f.ctx, t, e.Client, m)

	ExpectReconciled(f.ctx, t, f.mark, m)
	m = ExpectExists(f.ctx, t, e.Client, m)
	expectCondition(t, m, legacy.ConditionAdopted, corev1.ConditionTrue, legacy.ReasonNoNodePool, "no NodePool succeeds provisioner")
	expectCondition(t, m, legacy.ConditionDrifted, corev1.ConditionFalse, legacy.ReasonNotDrifted, "")
	if !slices.Contains(m.Finalizers, v1.TerminationFinalizer) {
		t.Fatalf("finalizer not added: %v", m.Finalizers)
	}

	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
		NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
	}}}}
	ExpectApplied(f.ctx, t, e.Client, np)
	stored := prov.DeepCopy()
	prov.Spec.Taints = []corev1.Taint{legacyTaint}
	if err := e.Client.Patch(f.ctx, prov, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	ExpectReconciled(f.ctx, t, f.mark, m)
	m = ExpectExists(f.ctx, t, e.Client, m)
	expectCondition(t, m, legacy.ConditionAdopted, corev1.ConditionTrue, legacy.ReasonAdopted, "NodePool default receives its pods")
	expectCondition(t, m, legacy.ConditionDrifted, corev1.ConditionTrue, legacy.ReasonProvisionerDrifted, "added karpenter.sh/legacy=true:NoSchedule")

	// Deleted with --cascade=orphan: the Machine stays, drifted.
	ExpectDeleted(f.ctx, t, e.Client, prov)
	ExpectNotFound(f.ctx, t, e.Client, prov)
	ExpectReconciled(f.ctx, t, f.mark, m)
	m = ExpectExists(f.ctx, t, e.Client, m)
	expectCondition(t, m, legacy.ConditionDrifted, corev1.ConditionTrue, legacy.ReasonProvisionerGone, `provisioner "default" no longer exists`)
}

func expectCondition(t *testing.T, m *v1alpha5.Machine, typ string, status corev1.ConditionStatus, reason, contains string) {
	t.Helper()
	for _, c := range m.Status.Conditions {
		if c.Type == typ {
			if c.Status != status || c.Reason != reason || !strings.Contains(c.Message, contains) {
				t.Fatalf("%s = %s %s %q, want %s %s containing %q", typ, c.Status, c.Reason, c.Message, status, reason, contains)
			}
			return
		}
	}
	t.Fatalf("no %s condition in %+v", typ, m.Status.Conditions)
}
