package controllers_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestRegisterWiresTheOperator builds what cmd/karpenter builds (the KWOK
// bundle, cluster state, every controller through Register) under a real
// manager, and follows a pending pod: the KWOKNodeClass and NodePool become
// Ready (the bundle's controller, the NodePool controllers), the provisioner
// (fed by the pod trigger and the state informers) creates a NodeClaim, the
// lifecycle controller launches it through the decorated provider, and the
// NodeClaim and provider call metrics move.
func TestRegisterWiresTheOperator(t *testing.T) {
	ctx, e, bundle := startOperator(t, "--batch-idle-duration=100ms", "--batch-max-duration=1s")

	np := createDefaultPool(ctx, t, e)
	Eventually(t, 30*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, np.DeepCopy())
		if !got.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("NodePool not Ready: %v", got.Status.Conditions)
		}
		if got.Annotations[v1.NodePoolHashAnnotationKey] != got.Hash() {
			return errors.New("NodePool without its hash annotation")
		}
		return nil
	})

	ExpectApplied(ctx, t, e.Client, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	})
	Eventually(t, 60*time.Second, func() error {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, l); err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d NodeClaims, want one for the pending pod", len(l.Items))
		}
		nc := l.Items[0]
		if nc.Labels[v1.NodePoolLabelKey] != "default" || nc.Labels[bundle.NodeClassLabelKey] != "default" {
			return fmt.Errorf("NodeClaim labels %v", nc.Labels)
		}
		if !nc.StatusConditions().Get(v1.ConditionTypeLaunched).IsTrue() {
			return fmt.Errorf("NodeClaim not launched: %v", nc.Status.Conditions)
		}
		return nil
	})
	for _, m := range []struct {
		name   string
		labels map[string]string
	}{
		{"karpenter_nodeclaims_created_total", map[string]string{"reason": "provisioning", "nodepool": "default"}},
		{"karpenter_cloudprovider_duration_seconds", map[string]string{"method": "Create", "provider": "kwok"}},
	} {
		if !reported(t, m.name, m.labels) {
			t.Errorf("%s%v not reported", m.name, m.labels)
		}
	}
}

// reported: the registry has a sample of name carrying labels.
func reported(t *testing.T, name string, labels map[string]string) bool {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	sample:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue sample
				}
			}
			return true
		}
	}
	return false
}
