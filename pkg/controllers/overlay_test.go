package controllers_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// With --feature-gates=NodeOverlay=true the operator acts on NodeOverlays:
// the overlay controller marks the overlay valid, the provisioner sees the
// extended resource it adds to the m family (at a tenth of the price), a pod
// requesting that resource gets a NodeClaim of the m family carrying both
// overlay annotations, and the KWOK provider launches it with the resource.
func TestRegisterWiresNodeOverlaysWithTheGate(t *testing.T) {
	// Without the cluster state metrics: they register once per process,
	// and TestRegisterWiresTheOperator registers them.
	ctx, e, _ := startOperator(t, "--batch-idle-duration=100ms", "--batch-max-duration=1s", "--feature-gates=NodeOverlay=true",
		"--disable-cluster-state-observability")
	createDefaultPool(ctx, t, e)
	create(ctx, t, e, &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m-licences"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: kwokv1alpha1.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
			PriceAdjustment: ptr.To("-90%"),
			Capacity:        corev1.ResourceList{"example.com/licence": resource.MustParse("4")},
		},
	})
	Eventually(t, 30*time.Second, func() error {
		o := ExpectExists(ctx, t, e.Client, &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m-licences"}})
		if !o.StatusConditions().Get(v1alpha1.ConditionTypeValidationSucceeded).IsTrue() {
			return fmt.Errorf("overlay conditions %v", o.Status.Conditions)
		}
		return nil
	})
	licence := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "example.com/licence": resource.MustParse("1")}
	create(ctx, t, e, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "licensed", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: licence, Limits: corev1.ResourceList{"example.com/licence": resource.MustParse("1")}}}}},
	})
	pod := ExpectExists(ctx, t, e.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "licensed", Namespace: "default"}})
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := e.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, func() error {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, l); err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d NodeClaims, want one for the licensed pod", len(l.Items))
		}
		nc := l.Items[0]
		if nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "true" || nc.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] != "true" {
			return fmt.Errorf("NodeClaim annotations %v", nc.Annotations)
		}
		if !nc.StatusConditions().Get(v1.ConditionTypeLaunched).IsTrue() {
			return fmt.Errorf("NodeClaim not launched: %v", nc.Status.Conditions)
		}
		if f := nc.Labels[kwokv1alpha1.InstanceFamilyLabelKey]; f != "m" {
			return fmt.Errorf("launched family %q, want m", f)
		}
		if q := nc.Status.Capacity["example.com/licence"]; q.Value() != 4 {
			return fmt.Errorf("NodeClaim capacity %v, want example.com/licence: 4", nc.Status.Capacity)
		}
		return nil
	})
}
