package legacy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
)

// getCondition returns the Machine's condition of this type, or nil.
func getCondition(m *v1alpha5.Machine, t string) *v1alpha5.Condition {
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == t {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

// isTrue reports whether the Machine's condition of this type is True.
func isTrue(m *v1alpha5.Machine, t string) bool {
	c := getCondition(m, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// setCondition sets a condition, keeping lastTransitionTime unless the status
// changes; it reports whether anything changed.
func setCondition(m *v1alpha5.Machine, c v1alpha5.Condition, now metav1.Time) bool {
	if cur := getCondition(m, c.Type); cur != nil {
		if cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
			return false
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		*cur = c
		return true
	}
	c.LastTransitionTime = now
	m.Status.Conditions = append(m.Status.Conditions, c)
	return true
}
