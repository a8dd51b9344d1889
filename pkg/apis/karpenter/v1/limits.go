package v1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ResourceNodes is the limit on a NodePool's number of nodes (limits.nodes).
const ResourceNodes corev1.ResourceName = "nodes"

// LimitsAdmitNoNode says which limit keeps every node out ("limits.cpu is 0"),
// or "" when a node may fit. Every node has some cpu and memory and counts as
// one node, so a limit of zero (or less) on any of these admits none; users set
// such limits to pause a pool, and the pool should say that it is paused.
func LimitsAdmitNoNode(limits Limits) string {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, ResourceNodes} {
		if q, ok := limits[name]; ok && q.Sign() <= 0 {
			return fmt.Sprintf("limits.%s is %s", name, q.String())
		}
	}
	return ""
}
