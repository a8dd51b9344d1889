package capacitybuffer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
)

// Reasons of a buffer's conditions (upstream's).
const (
	// ReadyForProvisioning.
	ReasonResolved            = "Resolved"
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	ReasonResolutionFailed    = "ResolutionFailed"
	// Provisioning.
	ReasonFitsExistingCapacity    = "FitsExistingCapacity"
	ReasonRequiresNewCapacity     = "RequiresNewCapacity"
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	ReasonBufferEmpty             = "BufferEmpty"
)

// Count is what one provisioning decision did with a buffer's virtual pods.
type Count struct {
	// Existing were placed on existing or in-flight capacity, New on NodeClaims
	// the decision launches, Failed nowhere.
	Existing, New, Failed int
}

// Tally counts, per buffer, its virtual pods among those a decision kept on
// existing capacity (existing), placed on new NodeClaims (launched) and could
// not place (failed).
func Tally(existing, launched, failed []*corev1.Pod) map[types.NamespacedName]*Count {
	out := map[types.NamespacedName]*Count{}
	count := func(pods []*corev1.Pod, inc func(*Count)) {
		for _, p := range pods {
			key, ok := Of(p)
			if !ok {
				continue
			}
			c := out[key]
			if c == nil {
				c = &Count{}
				out[key] = c
			}
			inc(c)
		}
	}
	count(existing, func(c *Count) { c.Existing++ })
	count(launched, func(c *Count) { c.New++ })
	count(failed, func(c *Count) { c.Failed++ })
	return out
}

// ProvisioningCondition is the Provisioning condition a decision gives the
// buffer, or nil to leave it as it is:
//   - False, NotReadyForProvisioning: the buffer is not resolved;
//   - False, BufferEmpty: it holds no chunk;
//   - False, RequiresNewCapacity: some chunk needed a new NodeClaim or found no place;
//   - True, FitsExistingCapacity: every chunk is on existing capacity;
//   - nil when the decision did not see its chunks (count nil) or saw only some.
func ProvisioningCondition(b *autoscalingv1beta1.CapacityBuffer, count *Count) *metav1.Condition {
	cond := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: autoscalingv1beta1.ConditionProvisioning, Status: status, Reason: reason, Message: msg, ObservedGeneration: b.Generation}
	}
	if !apimeta.IsStatusConditionTrue(b.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) {
		return cond(metav1.ConditionFalse, ReasonNotReadyForProvisioning, "the buffer is not ReadyForProvisioning")
	}
	want := int32(0)
	if b.Status.Replicas != nil {
		want = *b.Status.Replicas
	}
	if want <= 0 {
		return cond(metav1.ConditionFalse, ReasonBufferEmpty, "the buffer holds no chunk (status.replicas is 0)")
	}
	switch {
	case count == nil:
		return nil
	case count.New > 0 || count.Failed > 0:
		return cond(metav1.ConditionFalse, ReasonRequiresNewCapacity,
			fmt.Sprintf("%d of %d chunks need new capacity, %d found no place", count.New, want, count.Failed))
	case int32(count.Existing) == want:
		return cond(metav1.ConditionTrue, ReasonFitsExistingCapacity, fmt.Sprintf("all %d chunks fit on existing capacity", want))
	}
	return nil
}
