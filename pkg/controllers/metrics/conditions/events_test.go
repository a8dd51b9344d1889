package conditions_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/conditions"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func expectEvents(t *testing.T, r *record.FakeRecorder, want ...string) {
	t.Helper()
	got := drain(r)
	if len(got) != len(want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events\n%q\nwant\n%q", got, want)
		}
	}
}

// As operatorpkg's status controller: a condition seen before whose status
// changed gets a Normal event named after its type; a condition's first
// sighting or a reason change alone gets none; a finalizer that goes, from
// the object or with it, gets a Finalized event.
func TestNodeClaimStatusEvents(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodeClaimKind(kwok.NodeClassLabelKey))
	rec := record.NewFakeRecorder(100)
	ctrl.SetRecorder(rec)
	nc := nodeClaim("events", f.cond(v1.ConditionTypeLaunched, metav1.ConditionUnknown, "AwaitingLaunch", 0))
	nc.Finalizers = []string{v1.TerminationFinalizer, "example.com/other"}
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	expectEvents(t, rec)

	launched := f.cond(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", time.Second)
	launched.Message = ""
	nc.Status.Conditions = []status.Condition{launched, f.cond(v1.ConditionTypeRegistered, metav1.ConditionUnknown, "AwaitingRegistration", time.Second)}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	expectEvents(t, rec, "Normal Launched Status condition transitioned, Type: Launched, Status: Unknown -> True, Reason: Launched")

	nc.Status.Conditions = []status.Condition{launched, f.cond(v1.ConditionTypeRegistered, metav1.ConditionFalse, "RegistrationFailed", 2*time.Second)}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	expectEvents(t, rec, "Normal Registered Status condition transitioned, Type: Registered, Status: Unknown -> False, Reason: RegistrationFailed, Message: set by a test")

	nc = ExpectExists(f.ctx, t, testEnv.Client, nc)
	nc.Finalizers = []string{v1.TerminationFinalizer}
	ExpectApplied(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	expectEvents(t, rec, "Normal Finalized Finalized example.com/other")

	ExpectDeleted(f.ctx, t, testEnv.Client, nc)
	ExpectFinalizersRemoved(f.ctx, t, testEnv.Client, nc)
	ExpectNotFound(f.ctx, t, testEnv.Client, nc)
	ExpectReconciled(f.ctx, t, ctrl, nc)
	expectEvents(t, rec, "Normal Finalized Finalized "+v1.TerminationFinalizer)
}

func TestNodePoolReadyEvent(t *testing.T) {
	f := newFixture(t)
	ctrl := f.controller(t, conditions.NodePoolKind())
	rec := record.NewFakeRecorder(100)
	ctrl.SetRecorder(rec)
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}},
		Status: v1.NodePoolStatus{Conditions: []status.Condition{f.cond(status.ConditionReady, metav1.ConditionFalse, "NodeClassNotReady", 0)}},
	}
	ExpectApplied(f.ctx, t, testEnv.Client, np)
	ExpectReconciled(f.ctx, t, ctrl, np)
	expectEvents(t, rec)
	ready := f.cond(status.ConditionReady, metav1.ConditionTrue, "Ready", time.Second)
	ready.Message = ""
	np.Status.Conditions = []status.Condition{ready}
	ExpectStatusUpdated(f.ctx, t, testEnv.Client, np)
	ExpectReconciled(f.ctx, t, ctrl, np)
	expectEvents(t, rec, "Normal Ready Status condition transitioned, Type: Ready, Status: False -> True, Reason: Ready")
}
