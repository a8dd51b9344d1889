// Package termination finalizes Nodes: whether a Node is deleted directly
// (kubectl delete node), by its NodeClaim's finalizer (kubectl delete
// nodeclaim, disruption, expiration) or by the garbage collector (kubectl
// delete nodepool --cascade=foreground), the karpenter.sh/termination
// finalizer holds it until the node is drained and its instance is gone.
//
// The Controller takes a deleted Node through the steps in order, recording
// each on the NodeClaim's conditions (Drained, VolumesDetached,
// InstanceTerminating):
//
//   - its NodeClaim is deleted as well, so both objects go together;
//   - a Node that is not Ready and whose instance the cloud provider no longer
//     knows is released at once (nothing runs there to drain);
//   - the node is tainted karpenter.sh/disrupted:NoSchedule and drained by the
//     Drainer: pods leave in tiers (non-critical pods, then DaemonSet pods,
//     then system-cluster/node-critical pods, then critical DaemonSet pods),
//     each tier only once the previous one is gone, through the Eviction API
//     so PodDisruptionBudgets hold (package eviction queues and retries);
//     pods that tolerate the disrupted taint, mirror pods, finished pods and
//     pods stuck terminating neither are evicted nor hold the drain, and pods
//     annotated karpenter.sh/do-not-disrupt are waited for, never evicted;
//   - the NodeClaim's terminationGracePeriod (its
//     karpenter.sh/nodeclaim-termination-timestamp annotation) bounds all of
//     this: each pod still there is deleted directly, bypassing PDBs and
//     do-not-disrupt, early enough for its own terminationGracePeriodSeconds
//     to end by the deadline (at least 1s), and volume attachments are no
//     longer waited for once it passed;
//   - the node's VolumeAttachments are waited for, so volumes can move;
//   - the instance is deleted (package instance) until the cloud provider
//     reports it gone, and only then is the finalizer removed: an instance is
//     never leaked behind a vanished Node.
package termination
