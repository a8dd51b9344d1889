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
// the window is not dropped; it is written, with its own time, when the window
// ends, so the recorded time is never earlier than the last pod event
// (consolidation is late by at most the window, never early).
//
// With Never or 0s (0s is the default) the time cannot change when a node
// becomes consolidatable, and nothing is written: the node's last event is held
// in memory, and written when the NodePool's consolidateAfter becomes positive.
// Upstream writes the time whatever consolidateAfter is; here a node's
// lastPodEventTime stays as it was while its NodePool does not wait on it. A
// 2,000-node fleet's scale-down and consolidation made about 20 such writes per
// NodeClaim, the API server's costliest request there. Events held when the
// process restarts are lost; those nodes count from their stored time.
package podevents
