// Package orchestration carries out disruption decisions. The disruption
// controller decides (pure core in pkg/disruption) and hands a Command to the
// Queue; the Queue taints the candidates karpenter.sh/disrupted:NoSchedule,
// records the DisruptionReason condition, creates the replacement NodeClaims,
// marks the candidates for deletion in cluster state, waits until every
// replacement is Initialized, and only then deletes the candidates, whose
// termination finalizer drains them. When a replacement fails (deleted, e.g.
// for insufficient capacity, or not initialized before the timeout) the
// candidates are un-tainted and un-marked, and the reason is recorded.
//
// Replacement-before-drain is the point: a node is cordoned when the decision
// is taken but keeps serving its pods until the capacity that takes them over
// is ready.
//
// How the Queue works:
//
//   - A command is keyed by its first candidate's name. A NodeClaim is a
//     candidate of at most one command; Has answers whether it is one, from
//     the moment StartCommand begins until the candidates are deleted or the
//     command was rolled back.
//   - A controller (leader-elected, up to 100 commands reconciled at once)
//     checks each command. It is woken by every change of a replacement or
//     candidate NodeClaim, and otherwise polls with a 1s..10s backoff on the
//     clock, so an Initialized replacement is acted on at once.
//   - A command gives up after clamp(80ms × commands in flight, 10m, 1h), as
//     upstream does; the timeout grows with the queue because a large batch of
//     replacements takes the cloud provider longer to launch.
//   - The queue lives in memory. A restart loses it, leaving taints and
//     DisruptionReason conditions on nodes nobody will delete; on becoming
//     leader the Queue removes those (not from nodes being deleted: their
//     termination put the taint there), and the disruption controller decides
//     again from scratch. Replacements created before the restart are ordinary
//     NodeClaims by then; consolidation removes them if they stay unused.
package orchestration
