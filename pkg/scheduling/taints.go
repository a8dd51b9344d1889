package scheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ephemeralTaintKeys are taints a node carries only while it boots. They are ignored on nodes
// that have not finished initializing, so that pods are not kept off capacity that is about to
// become usable.
var ephemeralTaintKeys = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"karpenter.sh/unregistered":                      true,
}

// IsEphemeralTaint reports whether t is a boot-time taint (see ephemeralTaintKeys, plus any
// taint under the readiness.k8s.io/ prefix).
func IsEphemeralTaint(t corev1.Taint) bool {
	return ephemeralTaintKeys[t.Key] || strings.HasPrefix(t.Key, "readiness.k8s.io/")
}

// Tolerates reports whether one toleration tolerates the taint, with the API's semantics: an
// empty effect matches every effect, Exists matches any value, and an empty key with Exists
// matches every taint.
func Tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Key != "" && tol.Value == t.Value
	}
	return false
}

// ToleratesTaints returns an error naming the first taint no toleration covers. PreferNoSchedule
// taints count only when preferNoScheduleIsHard (preferences are honoured until relaxed). Where
// no message is shown, TaintsTolerated answers without building one.
func ToleratesTaints(tolerations []corev1.Toleration, taints []corev1.Taint, preferNoScheduleIsHard bool) error {
	if i := untolerated(tolerations, taints, preferNoScheduleIsHard); i >= 0 {
		t := taints[i]
		return fmt.Errorf("did not tolerate taint %s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return nil
}

// TaintsTolerated reports whether the tolerations cover every taint, as ToleratesTaints does,
// without allocating: solves and disruption passes ask it for node after node.
func TaintsTolerated(tolerations []corev1.Toleration, taints []corev1.Taint, preferNoScheduleIsHard bool) bool {
	return untolerated(tolerations, taints, preferNoScheduleIsHard) < 0
}

// toleratesAll is TaintsTolerated inside the package.
func toleratesAll(tolerations []corev1.Toleration, taints []corev1.Taint, preferNoScheduleIsHard bool) bool {
	return untolerated(tolerations, taints, preferNoScheduleIsHard) < 0
}

// untolerated returns the index of the first taint no toleration covers, -1 when none.
func untolerated(tolerations []corev1.Toleration, taints []corev1.Taint, preferNoScheduleIsHard bool) int {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !preferNoScheduleIsHard {
			continue
		}
		ok := false
		for j := range tolerations {
			if Tolerates(tolerations[j], *t) {
				ok = true
				break
			}
		}
		if !ok {
			return i
		}
	}
	return -1
}
