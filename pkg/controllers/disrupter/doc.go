// Package disrupter is the voluntary disruption controller: a leader-only
// loop that, every 10 s on its clock (at once after a pass that acted), takes
// a snapshot of the cluster, lets the pure core in pkg/disruption decide, and
// hands the decision to the orchestration queue (subpackage orchestration),
// which launches replacements before it deletes anything.
//
// A pass:
//
//  1. waits for cluster state to be synced (a decision on a partial view could
//     miss capacity or pods);
//  2. gathers the snapshot: cluster state's nodes and bound pods; the
//     provisioner's pending pods and solver input (the same NodePools, instance
//     types, limits and options provisioning uses, through
//     Provisioner.SolverInput), every NodePool with its instance types for
//     pricing, the PodDisruptionBudgets, "now" from the clock, and which nodes
//     the queue already holds or the provisioner nominated;
//  3. runs the methods in order (repair with the NodeRepair gate, emptiness,
//     drift, multi-node and single-node consolidation), timing each, until
//     one decides;
//  4. explains: for every node a method wanted but left alone, an event on the
//     Node and NodeClaim (reason DisruptionBlocked for rules and budgets,
//     Unconsolidatable when consolidation found nothing better; upstream's
//     reasons) and the NodeClaim condition DisruptionBlocked (True, reason the
//     core's code, message the explanation). Upstream has no such condition;
//     it is our addition under a type no upstream condition uses, present only
//     while something holds a wanted node back, so the many nodes nothing wants
//     to disrupt carry no extra condition. A NodePool whose budget allows
//     nothing gets a DisruptionBlocked event. Events go through the
//     deduplicating recorder of pkg/events (one per object, reason and message
//     per 2 minutes), so a pass every 10 s does not flood the API server;
//  5. for emptiness and consolidation, waits 15 s on the clock and validates
//     the decision against a fresh snapshot (pkg/disruption.Validate: still
//     candidates, still within budget, still a delete or a replacement whose
//     instance types are among those decided); a decision that fails is
//     dropped and counted in karpenter_voluntary_disruption_failed_validations_total.
//     Drift and repair act at once;
//  6. builds the Command (replacement NodeClaims from provisioning.NewNodeClaim)
//     and starts it on the queue; a repair decision to reboot skips the queue:
//     the NodeClaim gets the reboot's drain bound, DisruptionReason Unhealthy
//     and Rebooting True (RebootRequested), which the reboot controller
//     (pkg/controllers/nodeclaim/reboot) carries out. The controller remembers
//     the reboots it requested for 24 hours (pkg/disruption's RecentReboots).
//
// Metrics: karpenter_voluntary_disruption_decisions_total{decision, reason,
// consolidation_type}, _decisions_by_nodepool_total{nodepool, decision, reason,
// consolidation_type}, _eligible_nodes{reason}, _decision_evaluation_duration_seconds{reason,
// consolidation_type}, _consolidation_timeouts_total{consolidation_type},
// _failed_validations_total{consolidation_type},
// karpenter_nodepools_allowed_disruptions{nodepool, reason} and
// karpenter_nodepools_nodes_consuming_budgets{nodepool, reason}. Reasons are
// spelled as upstream's metrics do: lower case (empty, drifted, underutilized)
// for the voluntary_disruption metrics, but as the
// API spells them (Empty, Drifted, Underutilized) for the two nodepools gauges;
// consolidation_type is empty, multi, single, or "" for drift. A
// NodePool without an active budget for a reason reports 2147483647 allowed
// disruptions, as upstream does. Repair's reason is unhealthy (Unhealthy for
// the gauges), exported only with the NodeRepair gate; the queue counts the
// NodeClaims it repairs in karpenter_nodeclaims_unhealthy_disrupted_total.
package disrupter
