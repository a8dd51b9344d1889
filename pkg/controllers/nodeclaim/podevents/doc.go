// Package podevents keeps a NodeClaim's status.lastPodEventTime current: the
// last time a pod was bound to its node, or a pod on it was deleted or finished
// (Succeeded or Failed). Consolidation measures a NodePool's consolidateAfter
// from this time, so a node whose workload keeps changing is not consolidated
// under it.
//
// Pod events are mapped to the node they concern and collapse in the work queue,
// and a NodeClaim is written at most once every DedupeWindow: a busy node costs
// one status write per window, not one per pod. The window counts from the
// controller's own last write even when the cached NodeClaim does not show it
// yet.
//
// When the NodePool's consolidateAfter is a positive duration, an event inside
// the window is not dropped; it is written when the window ends, so the
// recorded time is never earlier than the last pod event (consolidation is late
// by at most the window, never early). With Never or 0s the time cannot change
// when a node becomes consolidatable, and such an event is dropped, as upstream
// drops every event inside the window.
package podevents
