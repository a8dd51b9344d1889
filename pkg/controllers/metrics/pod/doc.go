// Package pod exports upstream Karpenter's per-pod latency metrics, which the
// performance dashboard charts:
//
//   - karpenter_pods_bound_duration_seconds (histogram, label dynamic_resources):
//     creation until the PodScheduled condition turned True;
//   - karpenter_pods_startup_duration_seconds (summary, no labels): creation until
//     the Ready condition turned True;
//   - karpenter_pods_unbound_time_seconds (gauge, labels name, namespace and
//     dynamic_resources) and karpenter_pods_unstarted_time_seconds (gauge, labels
//     name and namespace): how long a pod that is still waiting has existed, so a
//     stuck pod is visible before it ever produces an observation;
//   - the karpenter_pods_provisioning_* variants of the four (bound/startup
//     histograms, unbound/unstarted gauges), which count from when the
//     provisioner first found the pod a place instead of from its creation, and
//     karpenter_pods_provisioning_scheduling_undecided_time_seconds, how long the
//     provisioner has seen a pod without deciding about it. Those moments are
//     cluster state's PodSchedulingTimes, in memory as upstream's.
//
// Durations come from the pod's own timestamps (creationTimestamp and the
// condition's lastTransitionTime), never from when this controller happened to
// reconcile, so a slow or restarted controller does not inflate them. The gauges
// are "now" (the controller's clock) minus creationTimestamp, computed when the
// metrics are scraped from the pods remembered as waiting: a waiting pod is not
// requeued (requeueing every waiting pod every 10 s cost a pod copy per pod per
// 10 s, thousands a second while a fleet of tens of thousands of pods scales up).
//
// Each histogram/summary observation happens once per pod: the controller
// remembers, in memory, the pods it has seen still waiting and observes a
// transition only when it remembers the pod waiting for it. Only pods first seen
// Pending are tracked, and a transition that happened before the first sighting
// (a pod first seen already bound) is not observed; this is what keeps a
// controller restart (which forgets everything) from re-observing every running
// pod in the cluster, and a Running pod that loses readiness from counting as a
// new start. A pod that turns terminal (Succeeded/Failed) while waiting loses its
// gauges without an observation: it never got there. A deleted pod (NotFound)
// loses its gauges and its memory, and a pod recreated under the same name (a
// new UID) starts afresh.
//
// pods_state lives with the provisioner's pod trigger.
package pod
