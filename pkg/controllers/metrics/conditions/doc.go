// Package conditions exports, per watched kind, the status condition metrics that
// upstream Karpenter v1 gets from awslabs/operatorpkg's status controller, under
// the same names and labels so its dashboards and alerts keep working. <kind> is
// the lower-case kind (nodeclaim, nodepool, node):
//
//   - operator_<kind>_status_condition_count (gauge; namespace, name, type, status,
//     reason): 1 for every condition an object has now;
//   - operator_<kind>_status_condition_current_status_seconds (gauge; same labels):
//     the controller's clock minus the condition's lastTransitionTime;
//   - operator_<kind>_status_condition_transitions_total (counter; type, status,
//     reason of the new state): one per observed status change;
//   - operator_<kind>_status_condition_transition_seconds (histogram, Prometheus'
//     default buckets; type, status of the state left, to_status of the state
//     entered): the new lastTransitionTime minus the old one, i.e. how long the
//     previous status held;
//   - operator_<kind>_termination_current_time_seconds (gauge; namespace, name): how
//     long an object has had a deletionTimestamp;
//   - operator_<kind>_termination_duration_seconds (histogram, default buckets; no
//     base labels): deletionTimestamp until the object was seen gone.
//
// Every family also carries the kind's extra labels: object label keys in snake
// case, valued from the object's labels ("" when absent). Like upstream, NodeClaim
// adds the provider's NodeClass label and karpenter_sh_nodepool, Node adds those
// and karpenter_sh_initialized, NodePool adds none.
//
// Transitions are detected by remembering, in memory, the conditions last seen
// per object, so they are best effort: two changes between reconciles count as
// one, and after a restart every condition's first sighting counts as a
// transition without a duration (upstream behaves the same: a condition's
// appearance is a transition). A change of reason alone is not a transition, but
// it does move the object's gauges to the new reason. The time gauges are
// computed when the metrics are scraped, from the times remembered per object:
// objects are not reconciled again just to keep them growing (upstream requeues
// every object every 10 s, a copy of every node and NodeClaim each time).
//
// A deleted object (NotFound) loses every per-object series; an object recreated
// under the same name (new UID) starts afresh.
//
// Kinds built with KindLess (NodeClaim, NodePool; upstream's status
// controllers with EmitDeprecatedMetrics) also write the kind-agnostic
// families operator_status_condition_{count,current_status_seconds,
// transitions_total,transition_seconds} and operator_termination_
// {current_time_seconds,duration_seconds}: the same base labels plus group and
// kind, without the kind's extra labels, one set per registry shared by the
// kinds.
//
// With a recorder (SetRecorder) the controller also records operatorpkg's
// events on the object: a Normal event whose reason is the condition type
// for each observed status change of a condition seen before ("Status
// condition transitioned, Type: Ready, Status: False -> True, Reason: Ready",
// with ", Message: ..." when the condition has one), and a Normal Finalized
// event ("Finalized karpenter.sh/termination") for each finalizer seen that is
// gone, from the object or with it. A condition's first sighting records none.
package conditions
