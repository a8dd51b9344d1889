package informer_test

import (
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// TestTransformPod: the recorded pod loses what Karpenter never reads and keeps what
// scheduling, disruption and termination do.
func TestTransformPod(t *testing.T) {
	raw, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatal(err)
	}
	p.Annotations[informer.LastAppliedAnnotation] = "{}"
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}})
	out, err := informer.Transform(p)
	if err != nil || out != p {
		t.Fatalf("Transform = %v, %v; want the pod itself", out, err)
	}
	c := p.Spec.Containers[0]
	for name, gone := range map[string]bool{
		"managedFields":   p.ManagedFields == nil,
		"last-applied":    p.Annotations[informer.LastAppliedAnnotation] == "",
		"env":             c.Env == nil,
		"readinessProbe":  c.ReadinessProbe == nil,
		"volumeMounts":    c.VolumeMounts == nil,
		"containerStatus": p.Status.ContainerStatuses == nil,
		"podIPs":          p.Status.PodIPs == nil && p.Status.PodIP == "",
	} {
		if !gone {
			t.Errorf("%s kept", name)
		}
	}
	for name, kept := range map[string]bool{
		"labels":            p.Labels["app"] == "checkout-api",
		"annotations":       p.Annotations["prometheus.io/port"] == "9102",
		"owner":             len(p.OwnerReferences) == 1,
		"requests":          c.Resources.Requests.Cpu().MilliValue() == 500,
		"limits":            !c.Resources.Limits.Memory().IsZero(),
		"ports":             len(c.Ports) == 1,
		"tolerations":       len(p.Spec.Tolerations) == 2,
		"topologySpread":    len(p.Spec.TopologySpreadConstraints) == 1,
		"nodeName":          p.Spec.NodeName == "node-000000",
		"claim volume only": len(p.Spec.Volumes) == 1 && p.Spec.Volumes[0].Name == "data",
		"phase":             p.Status.Phase == corev1.PodRunning,
		"conditions":        len(p.Status.Conditions) == 2,
	} {
		if !kept {
			t.Errorf("%s lost", name)
		}
	}
}

// TestTransformNode: images and managedFields go, labels, capacity and conditions stay.
func TestTransformNode(t *testing.T) {
	raw, err := os.ReadFile("testdata/node.json")
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := json.Unmarshal(raw, n); err != nil {
		t.Fatal(err)
	}
	if _, err := informer.Transform(n); err != nil {
		t.Fatal(err)
	}
	if n.ManagedFields != nil || n.Status.Images != nil {
		t.Errorf("managedFields (%d) or images (%d) kept", len(n.ManagedFields), len(n.Status.Images))
	}
	if len(n.Labels) != 29 || n.Spec.ProviderID == "" || n.Status.Allocatable.Cpu().MilliValue() != 15890 || len(n.Status.Conditions) != 4 {
		t.Errorf("lost labels (%d), provider ID %q, allocatable %v or conditions (%d)", len(n.Labels), n.Spec.ProviderID, n.Status.Allocatable, len(n.Status.Conditions))
	}
}

// A resized pod whose status holds more than its spec keeps, of its status, what its requests
// read; one whose status is its spec keeps none of it; pod-level resources always stay.
func TestTransformKeepsWhatResizedPodRequestsRead(t *testing.T) {
	cpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	pod := func(allocated string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{Requests: cpu("1")}}},
			Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "img", ImageID: "id", Ready: true,
			AllocatedResources: cpu(allocated), Resources: &corev1.ResourceRequirements{Requests: cpu(allocated), Limits: cpu("8")}}}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred},
		}
		return p
	}

	got, _ := informer.Transform(pod("4"))
	p := got.(*corev1.Pod)
	want := []corev1.ContainerStatus{{Name: "c", AllocatedResources: cpu("4"), Resources: &corev1.ResourceRequirements{Requests: cpu("4")}}}
	if !equality.Semantic.DeepEqual(p.Status.ContainerStatuses, want) {
		t.Errorf("resized pod's statuses: %+v, want %+v", p.Status.ContainerStatuses, want)
	}
	if len(p.Status.Conditions) != 2 || p.Status.Conditions[1].Type != corev1.PodResizePending {
		t.Errorf("resized pod's conditions: %+v", p.Status.Conditions)
	}
	if q := scheduling.PodRequests(p)[corev1.ResourceCPU]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("resized pod's cpu request from the cache: %s, want 4", q.String())
	}

	got, _ = informer.Transform(pod("1"))
	p = got.(*corev1.Pod)
	if p.Status.ContainerStatuses != nil || len(p.Status.Conditions) != 1 {
		t.Errorf("a status that is the spec was kept: %+v, %+v", p.Status.ContainerStatuses, p.Status.Conditions)
	}
	if p.Spec.Resources == nil || p.Spec.Resources.Requests.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("pod-level resources: %+v", p.Spec.Resources)
	}
}
