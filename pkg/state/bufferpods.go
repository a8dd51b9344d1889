package state

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Buffer pods: the virtual pods of CapacityBuffers (package capacitybuffer)
// that the provisioner's last decision kept on existing or in-flight capacity.
// Nothing binds them; state remembers them so that the disruption controller
// counts the room they keep as taken (a node keeping a buffer's room is not
// empty, and consolidating it must find that room elsewhere).
//
// They are kept by NodeClaim name where the node has one, which stays the same
// when an in-flight NodeClaim's Node registers and the node's name changes.

// SetBufferPods replaces the buffer pods with those of a decision, by the
// name the decision's input gave the node (StateNode.Name). A node state no
// longer has is left out.
func (c *Cluster) SetBufferPods(byNode map[string][]*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]*corev1.Pod{}
	if len(byNode) > 0 {
		for _, sn := range c.nodesLocked(false) {
			if pods := byNode[sn.Name()]; len(pods) > 0 {
				out[bufferKey(sn)] = pods
			}
		}
	}
	if len(out) == 0 && len(c.bufferPods) == 0 {
		return
	}
	if maps.EqualFunc(out, c.bufferPods, func(a, b []*corev1.Pod) bool {
		return slices.EqualFunc(a, b, func(x, y *corev1.Pod) bool { return x.UID == y.UID })
	}) {
		return
	}
	c.bufferPods = out
	c.generation++
}

// BufferPods are the buffer pods kept on the node, nil for none. The pods are
// shared: callers must not modify them.
func (c *Cluster) BufferPods(sn *StateNode) []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bufferPods[bufferKey(sn)]
}

func bufferKey(sn *StateNode) string {
	if sn.NodeClaim != nil {
		return "nodeclaim/" + sn.NodeClaim.Name
	}
	return "node/" + sn.Node.Name
}
