// Package node exports upstream Karpenter's per-node gauges (karpenter_nodes_allocatable,
// _total_pod_requests, _total_pod_limits, _total_daemon_requests, _total_daemon_limits,
// _system_overhead, _current_lifetime_seconds) and karpenter_cluster_utilization_percent,
// which Karpenter's Grafana dashboards chart.
//
// The controller is a leader-only manager Runnable: every 10 s on its clock it reads
// the in-memory cluster state (pkg/state), so a pass costs no API calls, and rewrites
// the gauges (a node whose Node object and bound pods are the objects the last pass
// read keeps the resource series that pass wrote: only its lifetime moves). Series of nodes that disappeared since the last pass are
// deleted after the new values are set, so a scrape never sees a node's series
// missing in between.
//
// Every node of the cluster is reported, as upstream does, once its Node object
// exists (in-flight NodeClaims have no allocatable or pods yet); the managed label
// tells Karpenter's nodes (a NodeClaim or a karpenter.sh/nodepool label) from the
// others. Semantics follow upstream v1:
//
//   - total_pod_requests / total_pod_limits count every pod bound to the node,
//     DaemonSet pods included; total_daemon_* count the DaemonSet pods alone;
//   - system_overhead is status.capacity minus status.allocatable;
//   - cluster_utilization_percent, per resource_type, is the sum of pod requests
//     over the sum of allocatable of all reported nodes, managed or not, times 100;
//   - cpu is in cores, every other resource in its base unit (memory in bytes).
//
// Labels: node_name, phase (the Node's status.phase), managed ("true" or "false"), one label
// per well-known node label named by its key's last segment in snake case (nodepool,
// zone, region, instance_type, arch, os, capacity_type, windows_build, plus the cloud
// provider's), and resource_type on the resource gauges (the resource name in lower
// snake case: cpu, memory, ephemeral_storage, pods).
package node
