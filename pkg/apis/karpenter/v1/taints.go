package v1

import corev1 "k8s.io/api/core/v1"

// Taint keys of karpenter.sh.
const (
	DisruptedTaintKey    = Group + "/disrupted"
	UnregisteredTaintKey = Group + "/unregistered"
	RebootingTaintKey    = Group + "/rebooting"
)

var (
	// DisruptedNoScheduleTaint is put on nodes Karpenter is about to disrupt
	// or is terminating, so that no new pods land there.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint is expected on a node when it boots and is
	// removed by Karpenter once the node registered; it keeps pods off nodes
	// whose labels and taints Karpenter has not synced yet.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	// RebootingNoScheduleTaint keeps new pods off a node that node repair is
	// rebooting, from the reboot's request until the node comes back with a
	// new boot ID (or the reboot fails).
	RebootingNoScheduleTaint = corev1.Taint{Key: RebootingTaintKey, Effect: corev1.TaintEffectNoSchedule}
)

// IsDisruptingTaint reports whether t is Karpenter's disrupted taint.
func IsDisruptingTaint(t corev1.Taint) bool {
	return t.MatchTaint(&DisruptedNoScheduleTaint) && t.Value == DisruptedNoScheduleTaint.Value
}
