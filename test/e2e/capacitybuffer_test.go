package e2e_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// A CapacityBuffer of 3 chunks shaped like a Deployment's pods keeps room for
// them: a scale-up of the Deployment to 3 binds its pods on nodes that existed
// before it, without waiting for a launch, and the buffer then refills.
func TestCapacityBufferScaleUpBindsWithoutLaunch(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t, "FEATURE_GATES=CapacityBuffer=true")
	dep := kit.Deployment("default", "web", 0, "1", "1Gi", false)
	buffer := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "web-spare", Namespace: "default"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"},
			Replicas:    ptr.To[int32](3),
		}}
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 16), dep, buffer)

	provisioned := func(want metav1.ConditionStatus) {
		t.Helper()
		var last *metav1.Condition
		if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
			b := &autoscalingv1beta1.CapacityBuffer{}
			if err := e.Client.Get(e.ctx, client.ObjectKeyFromObject(buffer), b); err != nil {
				return false, err
			}
			last = apimeta.FindStatusCondition(b.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
			return last != nil && last.Status == want && last.Reason == capacitybuffer.ReasonFitsExistingCapacity, nil
		}); err != nil {
			t.Fatalf("buffer Provisioning %+v, want %s FitsExistingCapacity", last, want)
		}
	}
	provisioned(metav1.ConditionTrue)
	var before []string
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		nodes := &corev1.NodeList{}
		if err := e.Client.List(e.ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		before = before[:0]
		for _, n := range nodes.Items {
			if n.Labels[v1.NodeInitializedLabelKey] == "true" {
				before = append(before, n.Name)
			}
		}
		c := e.counts(t)
		return len(before) > 0 && len(before) == c.NodeClaimsAll, nil
	}); err != nil {
		t.Fatalf("the buffer's nodes did not all initialize: %v", before)
	}
	claimsBefore := e.counts(t).NodeClaimsAll
	t.Logf("buffer of 3 kept on %d node(s): %v", len(before), before)

	d := &appsv1.Deployment{}
	if err := e.Client.Get(e.ctx, client.ObjectKeyFromObject(dep), d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](3)
	if err := e.Client.Update(e.ctx, d); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.waitRunning(t, 3, 2*time.Minute)
	t.Logf("3 pods running %s after the scale-up", time.Since(start).Round(100*time.Millisecond))
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	existed := map[string]bool{}
	for _, n := range before {
		existed[n] = true
	}
	for _, p := range pods.Items {
		if !existed[p.Spec.NodeName] {
			t.Errorf("pod %s runs on %s, a node launched after the scale-up (buffer nodes %v)", p.Name, p.Spec.NodeName, before)
		}
	}
	// The pods took the room: the buffer launches it again.
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) { return e.counts(t).NodeClaimsAll > claimsBefore, nil }); err != nil {
		t.Fatalf("the buffer did not refill: still %d nodeclaims", claimsBefore)
	}
	provisioned(metav1.ConditionTrue)
	// No event names a virtual pod: they do not exist.
	evs := &corev1.EventList{}
	if err := e.Client.List(e.ctx, evs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Kind == "Pod" && len(ev.InvolvedObject.Name) > len("capacity-buffer-") && ev.InvolvedObject.Name[:len("capacity-buffer-")] == "capacity-buffer-" {
			t.Errorf("event on a virtual pod: %s %s", ev.Reason, fmt.Sprint(ev.Message))
		}
	}
}
