package interruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption/messages"
)

// Event reasons (upstream's).
const (
	ReasonSpotInterrupted             = "SpotInterrupted"
	ReasonSpotRebalanceRecommendation = "SpotRebalanceRecommendation"
	ReasonInstanceStopping            = "InstanceStopping"
	ReasonInstanceTerminating         = "InstanceTerminating"
	ReasonInstanceUnhealthy           = "InstanceUnhealthy"
	ReasonTerminatingOnInterruption   = "TerminatingOnInterruption"
	// ReasonCapacityReservationInstanceInterrupted: EC2 warned that the
	// instance's capacity reservation is reclaiming it.
	ReasonCapacityReservationInstanceInterrupted = "CapacityReservationInstanceInterrupted"
)

type notice struct {
	eventType, reason, message string
}

// noticeFor is the event a message kind raises on the Node and NodeClaim.
func noticeFor(m messages.Message) (notice, bool) {
	switch m.Kind {
	case messages.SpotInterruptionKind:
		return notice{corev1.EventTypeWarning, ReasonSpotInterrupted, "Spot interruption warning: EC2 reclaims the instance in two minutes"}, true
	case messages.RebalanceRecommendationKind:
		return notice{corev1.EventTypeNormal, ReasonSpotRebalanceRecommendation, "Spot rebalance recommendation: the instance is at elevated risk of interruption"}, true
	case messages.InstanceStoppedKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceStopping, "Instance is " + m.State}, true
	case messages.InstanceTerminatedKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceTerminating, "Instance is " + m.State}, true
	case messages.ScheduledChangeKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceUnhealthy, "AWS Health scheduled change for the instance"}, true
	case messages.InstanceStatusKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceUnhealthy, "EC2 instance status check failed for the instance"}, true
	case messages.SystemStatusKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceUnhealthy, "EC2 system status check failed for the instance's host"}, true
	case messages.EventStatusKind:
		return notice{corev1.EventTypeWarning, ReasonInstanceUnhealthy, "EC2 scheduled an event (reboot, maintenance, retirement or stop) for the instance"}, true
	case messages.CapacityReservationInterruptionKind:
		return notice{corev1.EventTypeWarning, ReasonCapacityReservationInstanceInterrupted, "Capacity Reservation interruption warning was triggered"}, true
	}
	return notice{}, false
}

// publish records n on the NodeClaim and, when it has one, its Node.
func publish(r record.EventRecorder, nc *v1.NodeClaim, node *corev1.Node, n notice) {
	if r == nil {
		return
	}
	r.Event(nc, n.eventType, n.reason, n.message)
	if node != nil {
		r.Event(node, n.eventType, n.reason, n.message)
	}
}
