package e2e_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// A pending pod that claims a device through Dynamic Resource Allocation (a
// DeviceClass no driver publishes devices for, so kube-scheduler cannot place
// it either) launches nothing with IGNORE_DRA_REQUESTS left at true: it gets
// Karpenter's FailedScheduling event naming the setting, and no NodeClaim
// appears, while a plain pod beside it is provisioned for.
func TestPodWithResourceClaimLaunchesNothing(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}},
	}
	template := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name}}}}}},
	}
	trainer := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			ResourceClaims:                []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template.Name)}},
			Containers: []corev1.Container{{
				Name: "train", Image: "registry.invalid/trainer:1",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
				},
			}},
		},
	}
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 8), class, template, trainer)
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		evs := &corev1.EventList{}
		if err := e.Client.List(e.ctx, evs, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == trainer.Name && ev.Source.Component == "karpenter" && ev.Reason == "FailedScheduling" &&
				strings.Contains(ev.Message, "Dynamic Resource Allocation") && strings.Contains(ev.Message, "IGNORE_DRA_REQUESTS") {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no FailedScheduling event from karpenter naming the pod's resource claims (log %s)", e.current().LogPath)
	}
	e.expectNoNewNodeClaims(t, 0, 30*time.Second)

	e.apply(t, kit.Deployment("default", "web", 1, "1", "1Gi", false))
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		return err == nil && c.Running == 1 && c.Pending == 1, err
	}); err != nil {
		t.Fatalf("the plain pod does not run beside the pending one: %+v (log %s)", e.counts(t), e.current().LogPath)
	}
	ncs, _ := e.expectNodesMatchNodeClaims(t)
	if len(ncs) != 1 {
		t.Fatalf("%d nodeclaims, want the plain pod's one", len(ncs))
	}
	p := &corev1.Pod{}
	if err := e.Client.Get(e.ctx, client.ObjectKeyFromObject(trainer), p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Fatalf("the pod with the claim runs on %s", p.Spec.NodeName)
	}
}
