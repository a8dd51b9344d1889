package capacitybuffer

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
)

// IsVirtual reports whether pod is a buffer's virtual pod.
func IsVirtual(pod *corev1.Pod) bool {
	return pod != nil && pod.Annotations[autoscalingv1beta1.FakePodAnnotationKey] == autoscalingv1beta1.FakePodAnnotationValue
}

// Of names the buffer a virtual pod belongs to; ok is false for any other pod.
func Of(pod *corev1.Pod) (types.NamespacedName, bool) {
	if !IsVirtual(pod) {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: pod.Annotations[autoscalingv1beta1.BufferNamespaceAnnotation], Name: pod.Annotations[autoscalingv1beta1.BufferNameAnnotation]}
	return key, key.Name != "" && key.Namespace != ""
}

// Real returns the pods of pods that are not virtual (pods itself when all are real).
func Real(pods []*corev1.Pod) []*corev1.Pod {
	if !slices.ContainsFunc(pods, IsVirtual) {
		return pods
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !IsVirtual(p) {
			out = append(out, p)
		}
	}
	return out
}

// VirtualPods are the n pods that stand for the buffer's chunks, shaped like
// tmpl: its labels (so that affinity and topology spread see them as the
// workload's pods) and its spec without what would tie a pod to objects that do
// not exist for it (a node name, persistent volume claims and generic
// ephemeral volumes, and the mounts of those). Names (capacity-buffer-<buffer>-<i>)
// and UIDs (<buffer uid>-<i>) are stable across calls, so that a decision about
// a chunk is remembered from one run to the next.
func VirtualPods(b *autoscalingv1beta1.CapacityBuffer, tmpl corev1.PodTemplateSpec, n int32) []*corev1.Pod {
	if n <= 0 {
		return nil
	}
	spec := sanitize(tmpl.Spec)
	spec.Priority = ptr(autoscalingv1beta1.VirtualPodPriority)
	spec.PriorityClassName = ""
	out := make([]*corev1.Pod, 0, n)
	for i := int32(1); i <= n; i++ {
		out = append(out, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("capacity-buffer-%s-%d", b.Name, i),
				Namespace: b.Namespace,
				UID:       types.UID(fmt.Sprintf("%s-%d", b.UID, i)),
				Labels:    tmpl.Labels,
				Annotations: map[string]string{
					autoscalingv1beta1.FakePodAnnotationKey:      autoscalingv1beta1.FakePodAnnotationValue,
					autoscalingv1beta1.BufferNameAnnotation:      b.Name,
					autoscalingv1beta1.BufferNamespaceAnnotation: b.Namespace,
				},
				// The buffer's age: virtual pods sort with the pods of their time.
				CreationTimestamp: b.CreationTimestamp,
			},
			Spec: spec,
			Status: corev1.PodStatus{
				Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				}},
			},
		})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// sanitize copies spec without a node name, persistent volume claims, generic
// ephemeral volumes and the containers' mounts of those.
func sanitize(in corev1.PodSpec) corev1.PodSpec {
	spec := *in.DeepCopy()
	spec.NodeName = ""
	dropped := map[string]bool{}
	kept := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			dropped[v.Name] = true
			continue
		}
		kept = append(kept, v)
	}
	spec.Volumes = kept
	if len(dropped) == 0 {
		return spec
	}
	unmount := func(cs []corev1.Container) {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return dropped[m.Name] })
			cs[i].VolumeDevices = slices.DeleteFunc(cs[i].VolumeDevices, func(d corev1.VolumeDevice) bool { return dropped[d.Name] })
		}
	}
	unmount(spec.Containers)
	unmount(spec.InitContainers)
	return spec
}
