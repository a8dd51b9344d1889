package controllers_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestDeletedNodeClaimsPodsGetCapacityBeforeEviction runs the operator and
// deletes a NodeClaim whose node runs a pod that may not be evicted
// (karpenter.sh/do-not-disrupt: the drain waits for it forever). Nothing is
// pending, yet a replacement NodeClaim is launched for the pod while it still
// runs on the deleting node: deletion itself triggers provisioning, as an
// interruption needs (the replacement must be on its way before the pods are
// evicted, not after).
func TestDeletedNodeClaimsPodsGetCapacityBeforeEviction(t *testing.T) {
	// The metrics controllers register collectors once per process, and
	// TestRegisterWiresTheOperator registers them.
	ctx, e, _ := startOperator(t, "--batch-idle-duration=100ms", "--batch-max-duration=1s", "--disable-cluster-state-observability")
	createDefaultPool(ctx, t, e)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stays", Namespace: "default", Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
	ExpectApplied(ctx, t, e.Client, pod)

	// The pod's NodeClaim launches and registers; the pod is bound there (no
	// kube-scheduler in this test).
	var first v1.NodeClaim
	Eventually(t, 60*time.Second, func() error {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, l); err != nil {
			return err
		}
		if len(l.Items) != 1 || l.Items[0].Status.NodeName == "" {
			return fmt.Errorf("%d NodeClaims, want one registered", len(l.Items))
		}
		first = l.Items[0]
		return nil
	})
	if err := e.KubeClient.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: first.Status.NodeName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Ready, as its kubelet would report: a node that is not Ready and whose
	// instance is gone is released without a drain.
	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: first.Status.NodeName}})
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	ExpectStatusUpdated(ctx, t, e.Client, node)
	pod = ExpectExists(ctx, t, e.Client, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	ExpectStatusUpdated(ctx, t, e.Client, pod)

	ExpectDeleted(ctx, t, e.Client, &first)
	Eventually(t, 30*time.Second, func() error {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, l); err != nil {
			return err
		}
		for _, nc := range l.Items {
			if nc.Name != first.Name {
				return nil
			}
		}
		return fmt.Errorf("no replacement NodeClaim for the pod of deleting NodeClaim %s", first.Name)
	})
	if cur := ExpectExists(ctx, t, e.Client, pod); cur.Spec.NodeName != first.Status.NodeName || cur.DeletionTimestamp != nil {
		t.Fatalf("pod left the deleting node before the replacement was launched (node %q, deleting %v)", cur.Spec.NodeName, cur.DeletionTimestamp != nil)
	}
}
