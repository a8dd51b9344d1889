package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// StateNode is one unit of capacity: a Node, a NodeClaim, or both joined by
// provider ID. A NodeClaim without a Node is in flight (launching or registering).
// The objects are the state's own copies: read, never modify.
type StateNode struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	Pods      []*corev1.Pod

	// marked: the NodeClaim was marked for deletion in the cluster state
	// (Cluster.MarkForDeletion) when this view was taken.
	marked bool
}

// Name is the Node's name, or the NodeClaim's while no Node exists.
func (n *StateNode) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	return n.NodeClaim.Name
}

// ProviderID of the instance, "" while not launched.
func (n *StateNode) ProviderID() string {
	if n.Node != nil && n.Node.Spec.ProviderID != "" {
		return n.Node.Spec.ProviderID
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.ProviderID
	}
	return ""
}

// InFlight: a NodeClaim whose Node does not exist yet.
func (n *StateNode) InFlight() bool { return n.Node == nil }

// Managed: Karpenter owns it (there is a NodeClaim, or the Node names a NodePool).
func (n *StateNode) Managed() bool {
	return n.NodeClaim != nil || n.Labels()[v1.NodePoolLabelKey] != ""
}

// NodePool the capacity belongs to, "" when unmanaged.
func (n *StateNode) NodePool() string { return n.Labels()[v1.NodePoolLabelKey] }

// Launched: the instance exists.
func (n *StateNode) Launched() bool {
	return n.Node != nil || n.NodeClaim.StatusConditions().IsTrue(v1.ConditionTypeLaunched) || n.NodeClaim.Status.ProviderID != ""
}

// Registered: the Node joined for its NodeClaim (or is unmanaged and exists), as
// the Node itself shows it: registration labels it karpenter.sh/registered in the
// write that lifts the karpenter.sh/unregistered taint (upstream reads the label
// too). The NodeClaim's Registered condition is written after that, but state's
// copies of the two come from two watches: on a busy cluster the NodeClaim's
// Registered and Initialized arrive while state still holds the Node as it was
// before registration, boot taint included.
func (n *StateNode) Registered() bool {
	if n.Node == nil {
		return false
	}
	return n.NodeClaim == nil || n.Node.Labels[v1.NodeRegisteredLabelKey] == "true"
}

// Initialized: the node can take pods as advertised. For a managed node that is the
// NodeClaim's Initialized condition (or the initialized label, which survives the
// claim being briefly unknown); for an unmanaged node, being Ready.
func (n *StateNode) Initialized() bool {
	if n.Node == nil {
		return false
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.StatusConditions().IsTrue(v1.ConditionTypeInitialized) || n.Node.Labels[v1.NodeInitializedLabelKey] == "true"
	}
	if n.Node.Labels[v1.NodeInitializedLabelKey] == "true" {
		return true
	}
	for _, c := range n.Node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// MarkedForDeletion: the Node or NodeClaim is being deleted, or the disruption
// queue marked the NodeClaim for deletion; its capacity is going away.
func (n *StateNode) MarkedForDeletion() bool {
	return n.marked || (n.Node != nil && n.Node.DeletionTimestamp != nil) || (n.NodeClaim != nil && n.NodeClaim.DeletionTimestamp != nil)
}

// Labels: the Node's labels once it exists; before that the NodeClaim's labels plus
// every requirement that pins a single value (zone, instance type, ... once chosen),
// which is what the Node will carry.
func (n *StateNode) Labels() map[string]string {
	if n.Node != nil {
		return n.Node.Labels
	}
	out := map[string]string{}
	for _, r := range n.NodeClaim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out[r.Key] = r.Values[0]
		}
	}
	for k, v := range n.NodeClaim.Labels {
		out[k] = v
	}
	if _, ok := out[corev1.LabelHostname]; !ok {
		out[corev1.LabelHostname] = n.NodeClaim.Name
	}
	return out
}

// Taints the pods must tolerate. Before registration they are the NodeClaim's.
// They are read from one copy of the Node, together with what that copy shows of
// its registration and initialization: a copy older than the NodeClaim's
// conditions (see Registered) is not registered yet, and one not yet labeled
// initialized still carries the boot taints the node has since shed, so these
// are left out as for a node still starting. Judged by the NodeClaim's
// Initialized condition instead, such a copy kept every pod off a node
// kube-scheduler was already binding to, and the pods were launched for again.
func (n *StateNode) Taints() []corev1.Taint {
	if n.Node == nil || !n.Registered() {
		return n.NodeClaim.Spec.Taints
	}
	taints := n.Node.Spec.Taints
	if n.Rebooting() {
		// The reboot's taint fences the node only until it is back: its
		// capacity is coming back, not going away, so the solver ignores it.
		kept := make([]corev1.Taint, 0, len(taints))
		for _, t := range taints {
			if !t.MatchTaint(&v1.RebootingNoScheduleTaint) {
				kept = append(kept, t)
			}
		}
		taints = kept
	}
	if n.NodeClaim == nil || n.Node.Labels[v1.NodeInitializedLabelKey] == "true" {
		return taints
	}
	for i, t := range taints {
		if !scheduling.IsEphemeralTaint(t) {
			continue
		}
		// A copy: the slice is the informer's.
		out := append([]corev1.Taint(nil), taints[:i]...)
		for _, t := range taints[i+1:] {
			if !scheduling.IsEphemeralTaint(t) {
				out = append(out, t)
			}
		}
		return out
	}
	return taints
}

// Rebooting: the node's NodeClaim has a reboot in progress (its Rebooting
// condition is True).
func (n *StateNode) Rebooting() bool {
	return n.NodeClaim != nil && n.NodeClaim.StatusConditions().Get(v1.ConditionTypeRebooting).IsTrue()
}

// StartupTaints of the NodeClaim (none for unmanaged nodes).
func (n *StateNode) StartupTaints() []corev1.Taint {
	if n.NodeClaim == nil {
		return nil
	}
	return n.NodeClaim.Spec.StartupTaints
}

// Allocatable: the Node's once it is initialized (or unmanaged); before that the
// NodeClaim's launched allocatable, and before launch its requests, i.e. exactly
// what the provisioner sized it for, so the pods it was created for still fit on
// it in the next batch instead of causing a second launch.
func (n *StateNode) Allocatable() corev1.ResourceList {
	if n.Node != nil && (n.NodeClaim == nil || (n.Initialized() && len(n.Node.Status.Allocatable) > 0)) {
		return n.Node.Status.Allocatable
	}
	if len(n.NodeClaim.Status.Allocatable) > 0 {
		return n.NodeClaim.Status.Allocatable
	}
	return n.NodeClaim.Spec.Resources.Requests
}

// Capacity: like Allocatable, for limit accounting.
func (n *StateNode) Capacity() corev1.ResourceList {
	if n.Node != nil && (n.NodeClaim == nil || (n.Initialized() && len(n.Node.Status.Capacity) > 0)) {
		return n.Node.Status.Capacity
	}
	if len(n.NodeClaim.Status.Capacity) > 0 {
		return n.NodeClaim.Status.Capacity
	}
	return n.NodeClaim.Spec.Resources.Requests
}

// Nodes returns every unit of capacity, sorted by name, joined under the lock so
// that a Node and its NodeClaim are never seen as two.
func (c *Cluster) Nodes() []*StateNode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodesLocked(true)
}

// nodesLocked is Nodes under the caller's lock. Without pods it leaves every
// StateNode's Pods empty: a caller that sums capacity or counts nodes does not
// pay for copying and sorting the pods of the whole cluster (at 20,000 pods,
// most of what Nodes cost).
func (c *Cluster) nodesLocked(withPods bool) []*StateNode {
	byProviderID := map[string]*v1.NodeClaim{}
	byNodeName := map[string]*v1.NodeClaim{}
	for _, nc := range c.nodeClaims {
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = nc
		}
		if nc.Status.NodeName != "" {
			byNodeName[nc.Status.NodeName] = nc
		}
	}
	joined := map[string]bool{}
	out := make([]*StateNode, 0, len(c.nodes)+len(c.nodeClaims))
	for _, node := range c.nodes {
		sn := &StateNode{Node: node}
		if nc, ok := byProviderID[node.Spec.ProviderID]; ok && node.Spec.ProviderID != "" {
			sn.NodeClaim = nc
		} else if nc, ok := byNodeName[node.Name]; ok {
			sn.NodeClaim = nc
		}
		if sn.NodeClaim != nil {
			joined[sn.NodeClaim.Name] = true
			sn.marked = c.marked[sn.NodeClaim.Name]
		}
		if withPods {
			sn.Pods = c.podsOn(node.Name)
		}
		out = append(out, sn)
	}
	for name, nc := range c.nodeClaims {
		if joined[name] {
			continue
		}
		// The kube-scheduler may bind to a node before the watch shows it; pods bound
		// to the claim's future node name are counted against it.
		sn := &StateNode{NodeClaim: nc, marked: c.marked[name]}
		if withPods && nc.Status.NodeName != "" {
			sn.Pods = c.podsOn(nc.Status.NodeName)
		}
		out = append(out, sn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func (c *Cluster) podsOn(node string) []*corev1.Pod {
	m := c.podsByNode[node]
	if len(m) == 0 {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// NodeClaimNode returns, for the NodeClaim with this name, the name of its node
// ("" until it registered), since when that node is initialized (zero: not yet), and the pods bound
// to it (state's own: read, never modify). ok is false once state no longer
// knows the NodeClaim. It costs a lookup, not a join of the whole cluster.
func (c *Cluster) NodeClaimNode(name string) (node string, initialized time.Time, pods []*corev1.Pod, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nc, ok := c.nodeClaims[name]
	if !ok {
		return "", time.Time{}, nil, false
	}
	node = nc.Status.NodeName
	if node == "" {
		return "", time.Time{}, nil, true
	}
	n, found := c.nodes[node]
	if !found {
		return node, time.Time{}, c.podsOn(node), true
	}
	sn := &StateNode{Node: n, NodeClaim: nc}
	if !sn.Initialized() {
		return node, time.Time{}, c.podsOn(node), true
	}
	// Since when: the NodeClaim's Initialized condition, or now for a node
	// initialized without one (its time is not known, so it counts from here).
	initialized = c.clock.Now()
	if cond := nc.StatusConditions().Get(v1.ConditionTypeInitialized); cond != nil && cond.IsTrue() && !cond.LastTransitionTime.IsZero() {
		initialized = cond.LastTransitionTime.Time
	}
	return node, initialized, c.podsOn(node), true
}

// BoundPod returns the pod state knows bound under key (state's own: read,
// never modify), or nil when it knows none: pending, terminal or gone.
func (c *Cluster) BoundPod(key types.NamespacedName) *corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	node, ok := c.podNode[key]
	if !ok {
		return nil
	}
	return c.podsByNode[node][key]
}

// NodePoolUsage sums the capacity of the NodePool's nodes, plus "nodes" = their
// count. capacityOf, when set, overrides a node's capacity (the provisioner uses it
// to count a not-yet-launched NodeClaim at the largest capacity it may launch with,
// so concurrent batches cannot overshoot a limit).
func (c *Cluster) NodePoolUsage(nodePool string, capacityOf func(*StateNode) corev1.ResourceList) corev1.ResourceList {
	c.mu.RLock()
	nodes := c.nodesLocked(false)
	c.mu.RUnlock()
	out := corev1.ResourceList{}
	count := int64(0)
	for _, sn := range nodes {
		if sn.NodePool() != nodePool {
			continue
		}
		count++
		capy := sn.Capacity()
		if capacityOf != nil {
			if o := capacityOf(sn); o != nil {
				capy = o
			}
		}
		for name, q := range capy {
			cur := out[name]
			cur.Add(q)
			out[name] = cur
		}
	}
	out[corev1.ResourceName("nodes")] = *resourceCount(count)
	return out
}
