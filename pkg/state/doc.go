// Package state keeps Karpenter's in-memory view of the cluster: nodes, the
// NodeClaims behind them (including those still being launched), the pods bound to
// each, DaemonSets (with the newest pod of each, which sizes the daemon
// overhead: see daemonpods.go) and NodePools, plus what the solver reads besides
// capacity (namespace labels, PersistentVolumeClaims, PersistentVolumes,
// StorageClasses).
// Informer-driven controllers (package state/informer) feed it; the provisioner
// reads it to build the solver's snapshot, which therefore never reads the API.
//
// Why not read the API cache directly at decision time? Two reasons. A NodeClaim the
// provisioner has just created must count as capacity at once, before the watch
// delivers it, or the next batch launches the same capacity again; the provisioner
// records it here directly. And joining Nodes to NodeClaims by provider ID, and pods
// to nodes, on every batch would cost O(pods) allocations per decision; here the
// join is maintained incrementally.
//
// No decision may be taken on a partial view: Synced reports whether every Node and
// NodeClaim the API cache holds is known here.
package state
