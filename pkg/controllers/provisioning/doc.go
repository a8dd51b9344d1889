// Package provisioning launches capacity for pods the kube-scheduler cannot place.
//
// The pod trigger (trigger.go) watches pods and signals the batcher for every pod
// that is provisionable: PodScheduled=False with reason Unschedulable, not bound, not
// nominated by a preemption, not owned by a DaemonSet or a Node; and for every pod
// kube-scheduler has not tried yet (AwaitingScheduler), so that a scale-up is
// decided on as its pods appear rather than at the pace kube-scheduler marks
// them (the solver still places a pod on existing capacity first). The batcher
// (batcher.go) gathers triggers into one decision: a window opens with the first
// trigger and closes after BATCH_IDLE_DURATION without a new pod, or after
// BATCH_MAX_DURATION in any case, so a Deployment scaled to 500 replicas is solved
// once rather than 500 times. The provisioner (provisioner.go) then waits for
// cluster state to be synced, takes a snapshot, adapts NodePools and the cloud
// provider's instance types into the pure solver's input, solves, and creates one
// NodeClaim per new claim (nodeclaim.go), recording per-pod events.
//
// The daemon overhead a new claim is sized with is what the DaemonSets run on
// a new node: the newest pod of each as admitted (state.Cluster.DaemonSetPods).
// Should NodeClaims launched for some pods keep becoming nodes those pods do not
// run on, the provisioner stops launching for them, with a LaunchLoop event and
// karpenter_provisioner_launch_loops_total (loops.go), instead of launching
// forever.
package provisioning
