package top

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The transforms run before an object enters an informer's cache and keep
// only what the Model reads: on a large cluster a Pod's managed fields,
// volumes, env and status are most of its size, and a Node's image list is
// most of its.

func slimMeta(m *metav1.ObjectMeta, labels bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
	if labels {
		out.Labels = m.Labels
	}
	return out
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{
			Name:          cs[i].Name,
			Resources:     corev1.ResourceRequirements{Requests: cs[i].Resources.Requests, Limits: cs[i].Resources.Limits},
			RestartPolicy: cs[i].RestartPolicy,
		}
	}
	return out
}

// slimPod keeps the node binding, the phase and what PodRequests reads.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: slimMeta(&p.ObjectMeta, false),
		Spec: corev1.PodSpec{
			NodeName:       p.Spec.NodeName,
			Containers:     slimContainers(p.Spec.Containers),
			InitContainers: slimContainers(p.Spec.InitContainers),
			Overhead:       p.Spec.Overhead,
			Resources:      p.Spec.Resources,
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	// A pod resized in place keeps what its requests read of its status.
	if scheduling.ResizeChangesRequests(p) {
		out.Status.ContainerStatuses = slimStatuses(p.Status.ContainerStatuses)
		out.Status.InitContainerStatuses = slimStatuses(p.Status.InitContainerStatuses)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending {
				out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
			}
		}
	}
	return out, nil
}

func slimStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i := range cs {
		out[i] = corev1.ContainerStatus{Name: cs[i].Name, AllocatedResources: cs[i].AllocatedResources}
		if r := cs[i].Resources; r != nil && r.Requests != nil {
			out[i].Resources = &corev1.ResourceRequirements{Requests: r.Requests}
		}
	}
	return out
}

// slimNode keeps labels, the provider ID, the taints and cordon, the Ready
// condition and allocatable.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: slimMeta(&n.ObjectMeta, true),
		Spec:       corev1.NodeSpec{ProviderID: n.Spec.ProviderID, Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// slimNodeClaim turns the dynamic client's unstructured NodeClaim into a typed
// one with its labels, node, provider ID and allocatable.
func slimNodeClaim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	nc := &v1.NodeClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return nil, err
	}
	out := &v1.NodeClaim{ObjectMeta: slimMeta(&nc.ObjectMeta, true)}
	out.Status.NodeName, out.Status.ProviderID, out.Status.Allocatable = nc.Status.NodeName, nc.Status.ProviderID, nc.Status.Allocatable
	return out, nil
}

// slimNodePool keeps the name and the limits.
func slimNodePool(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	np := &v1.NodePool{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, np); err != nil {
		return nil, err
	}
	out := &v1.NodePool{ObjectMeta: slimMeta(&np.ObjectMeta, false)}
	out.Spec.Limits = np.Spec.Limits
	return out, nil
}
