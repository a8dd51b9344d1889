package capacitybuffer

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Replicas is how many chunks the buffer holds, as Cluster Autoscaler and
// upstream Karpenter count them: the larger of spec.replicas and
// spec.percentage of the workload's replicas (scalable: the scalableRef's
// replica count, nil for a podTemplateRef buffer, whose percentage means
// nothing), capped by what fits in spec.limits; with neither replicas nor a
// percentage that applies, limits alone decide. pod is the chunk's spec.
func Replicas(spec autoscalingv1beta1.CapacityBufferSpec, pod *corev1.PodSpec, scalable *int32) int32 {
	var desired int32
	sized := false
	if spec.Replicas != nil {
		desired, sized = *spec.Replicas, true
	}
	if spec.Percentage != nil && scalable != nil && *scalable > 0 {
		desired, sized = max(desired, PercentageReplicas(*scalable, *spec.Percentage)), true
	}
	if len(spec.Limits) > 0 && pod != nil {
		if n, ok := LimitReplicas(spec.Limits, pod); ok {
			if !sized {
				return n
			}
			return min(desired, n)
		}
	}
	return desired
}

// PercentageReplicas is percentage of replicas, rounded up, and at least one
// chunk when both are positive.
func PercentageReplicas(replicas, percentage int32) int32 {
	if replicas <= 0 || percentage <= 0 {
		return 0
	}
	n := (int64(replicas)*int64(percentage) + 99) / 100
	return int32(min(max(n, 1), math.MaxInt32))
}

// LimitReplicas is how many chunks of pod fit in limits: for every resource
// both name (a chunk requesting it), the limit over the request, rounded down,
// and the least of those. ok is false when no resource is both limited and
// requested: limits then cap nothing.
func LimitReplicas(limits corev1.ResourceList, pod *corev1.PodSpec) (int32, bool) {
	requests := scheduling.PodRequests(&corev1.Pod{Spec: *pod})
	least := int64(math.MaxInt32)
	ok := false
	for name, limit := range limits {
		req, found := requests[name]
		if !found || req.IsZero() {
			continue
		}
		ok = true
		least = min(least, limit.MilliValue()/req.MilliValue())
	}
	if !ok {
		return 0, false
	}
	return int32(max(least, 0)), true
}
