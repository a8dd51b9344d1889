package scheduling

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
)

// HasDRARequests reports whether a pod asks for devices through Dynamic Resource Allocation:
// it lists resource claims (spec.resourceClaims), or one of its containers or init containers
// names a claim in its resources. Extended resources are requests like any other, whether or
// not a DeviceClass backs them.
func HasDRARequests(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for i := range pod.Spec.Containers {
		if len(pod.Spec.Containers[i].Resources.Claims) > 0 {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if len(pod.Spec.InitContainers[i].Resources.Claims) > 0 {
			return true
		}
	}
	return false
}

// DRAError is why a pod with Dynamic Resource Allocation requests is not placed while
// Options.SimulateDRARequests is unset (IGNORE_DRA_REQUESTS=true, the default). Such a pod is
// not relaxed: no preference dropped would change the answer.
type DRAError struct{}

// DRAErrorMessage is DRAError's text: upstream's words, then the setting that decides it.
const DRAErrorMessage = "pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter " +
	"(pods with resource claims are left pending while IGNORE_DRA_REQUESTS is true)"

func (DRAError) Error() string { return DRAErrorMessage }

// IsDRAError reports whether err is, or wraps, a DRAError.
func IsDRAError(err error) bool {
	var e DRAError
	var pe *DRAError
	return errors.As(err, &e) || errors.As(err, &pe)
}

// errDRA is the one DRAError the solver hands out.
var errDRA error = DRAError{}

// withoutDRA is the DaemonSet pods without those with Dynamic Resource Allocation requests: the
// slice itself when none has any.
func withoutDRA(pods []*corev1.Pod) []*corev1.Pod {
	for i, p := range pods {
		if !HasDRARequests(p) {
			continue
		}
		out := append(make([]*corev1.Pod, 0, len(pods)-1), pods[:i]...)
		for _, q := range pods[i+1:] {
			if !HasDRARequests(q) {
				out = append(out, q)
			}
		}
		return out
	}
	return pods
}
