// Package sim replays a churning workload against the provisioning solver
// (pkg/scheduling) and the disruption core (pkg/disruption), applying every
// decision in memory, so that consolidation policies can be compared on the
// same demand: how many moves each makes, how many pods it evicts, and what the
// fleet costs over time. It is pure: no API server, no clock, no randomness
// but a seeded generator, so one seed gives one history.
//
// The workload is a set of Deployments whose replica counts follow a daily
// wave with noise and occasional bursts (workload.go). The whole demand curve
// is drawn from the seed before the first step, so every policy replayed with
// one seed sees the same replica counts at every step, whatever its fleet.
//
// A step is:
//
//  1. Scale: each Deployment reaches its replica count for the step. New pods
//     are pending; surplus pods are deleted in the ReplicaSet controller's
//     order (pending first, then pods doubled up on a node, newest first).
//  2. Provision: the pending pods are solved against the fleet and the
//     NodePools; pods go where the solver put them, new claims are launched as
//     nodes of the cheapest offering they allow.
//  3. Disrupt: disruption.Run decides over the fleet, its decision is applied
//     (candidates removed, replacements launched, the candidates' pods re-homed)
//     and the pass runs again until it decides nothing. A step stands for a
//     stretch of time long enough for the controller to reach that point; the
//     bound on passes (Config.MaxPassesPerStep) only guards against a loop.
//  4. Account: the fleet's $/h at the end of the step is recorded.
//
// Applying a decision follows the orchestration queue: the replacements are
// launched, then the candidates go and their pods are evicted. The pods the
// decision's simulation put on a replacement are bound to it; the others are
// solved again against the remaining fleet, which is what the decision's
// simulation asked of the same solver, so they land where it promised. Nodes
// launched during a step are not disrupted in that step: they stand for
// capacity the provisioner has just nominated for its pods. With
// Config.LeastAllocated the evicted pods go instead, one by one, to the node
// of their pool left emptiest, as kube-scheduler's default scoring tends to
// send them; pods that then find no room are provisioned for (Relaunched).
//
// Check verifies the invariants a correct replay keeps after every step: each
// Deployment's live pods are exactly its replica count, each bound on one node
// or pending, and no node holds more than its allocatable.
package sim
