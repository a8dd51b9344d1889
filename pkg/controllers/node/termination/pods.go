package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/donotdisrupt"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// StuckTerminatingAfter: a pod still present this long after its deletion
// timestamp (which already includes its grace period) is taken to be stuck,
// e.g. on a kubelet that stopped answering, and no longer holds the drain.
const StuckTerminatingAfter = time.Minute

// Priority classes whose pods are evicted after every other pod.
const (
	systemClusterCritical = "system-cluster-critical"
	systemNodeCritical    = "system-node-critical"
)

// Tier is the order in which pods leave a node: each tier is evicted only once
// no pod of an earlier tier is left, so that, as in a kubelet's graceful
// shutdown, workloads go before the daemons and critical components that may
// serve them (logging, networking, DNS).
type Tier int

// The tiers, first to last.
const (
	TierWorkload Tier = iota
	TierDaemon
	TierCriticalWorkload
	TierCriticalDaemon
	tierCount
)

func (t Tier) String() string {
	switch t {
	case TierWorkload:
		return "non-critical pods"
	case TierDaemon:
		return "non-critical DaemonSet pods"
	case TierCriticalWorkload:
		return "critical pods"
	case TierCriticalDaemon:
		return "critical DaemonSet pods"
	}
	return "unknown"
}

// TierOf returns the pod's eviction tier.
func TierOf(pod *corev1.Pod) Tier {
	critical := pod.Spec.PriorityClassName == systemClusterCritical || pod.Spec.PriorityClassName == systemNodeCritical
	daemon := scheduling.OwnedByDaemonSet(pod)
	switch {
	case critical && daemon:
		return TierCriticalDaemon
	case critical:
		return TierCriticalWorkload
	case daemon:
		return TierDaemon
	}
	return TierWorkload
}

// IsTerminal: the pod's containers have all stopped for good.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsTerminating: the pod was deleted and waits for its kubelet.
func IsTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// IsStuckTerminating: the pod outlived its deletion by StuckTerminatingAfter.
func IsStuckTerminating(pod *corev1.Pod, now time.Time) bool {
	return IsTerminating(pod) && now.After(pod.DeletionTimestamp.Add(StuckTerminatingAfter))
}

// IsOwnedByNode: a static pod's mirror. The kubelet owns it; the API server
// cannot evict or delete the pod behind it.
func IsOwnedByNode(pod *corev1.Pod) bool {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Node" {
			return true
		}
	}
	return false
}

// ToleratesDisruptedTaint: the pod asked to stay on disrupted nodes (it
// tolerates karpenter.sh/disrupted:NoSchedule), so it is not evicted and does
// not hold the drain; it stops with the instance.
func ToleratesDisruptedTaint(pod *corev1.Pod) bool {
	for _, tol := range pod.Spec.Tolerations {
		if scheduling.Tolerates(tol, v1.DisruptedNoScheduleTaint) {
			return true
		}
	}
	return false
}

// DoNotEvictAnnotationKey is v1alpha5's pod annotation blocking eviction
// (karpenter.sh/do-not-evict), replaced by karpenter.sh/do-not-disrupt.
const DoNotEvictAnnotationKey = "karpenter.sh/do-not-evict"

// HasDoNotDisrupt reports whether the pod's karpenter.sh/do-not-disrupt
// annotation protects it at now, as upstream reads it (see package
// donotdisrupt): "true", or a positive duration (e.g. "4h") not yet elapsed
// since the pod started (or a pod that has not started); any other value is
// ignored. The v1alpha5 karpenter.sh/do-not-evict: "true" of pods an older
// install left running protects them the same way (until they are
// re-annotated).
func HasDoNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	if pod.Annotations[DoNotEvictAnnotationKey] == "true" {
		return true
	}
	return donotdisrupt.Evaluate(pod, now).Active
}

// HoldsDrain reports whether the node must wait for the pod before it counts
// as drained: every pod except terminal ones, mirror pods, pods tolerating the
// disrupted taint and pods stuck terminating.
func HoldsDrain(pod *corev1.Pod, now time.Time) bool {
	return !IsTerminal(pod) && !IsOwnedByNode(pod) && !ToleratesDisruptedTaint(pod) && !IsStuckTerminating(pod, now)
}
