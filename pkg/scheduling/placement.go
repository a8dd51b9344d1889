package scheduling

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Placement compiles pods' and nodes' constraints the way Solve does, without solving, for code
// that must predict Solve cheaply. pkg/disruption is its user: it packs pods first-fit to find
// which few nodes a consolidation question concerns, then solves on those alone, and it must
// never let a constraint it does not know about make that narrowed solve more optimistic than a
// solve over the whole cluster.
//
// Every constraint the solver enforces reaches a Placement user through one of these, each
// computed by the functions Solve itself uses:
//
//   - node-local and static (node selector, required node affinity, volume topology, taints):
//     PodPlacement.Admits, keyed by PodPlacement.Key and NodePlacement.Shape;
//   - node-local and consumed by the pods placed (host ports): PodPlacement.PortsFree;
//   - counting pods anywhere in the cluster (topology spread, pod affinity and anti-affinity,
//     required or preferred while in force): PodPlacement.Topology, plus RepelsBeyondItsNode for
//     the bound pods whose required anti-affinity keeps later pods out of a whole domain;
//   - the order Solve tries pods in: PodPlacement.Before;
//   - which NodePools a new node for the pod could come from: Placement.MayLaunchFrom.
//
// A new kind of constraint is taught to the solver (pods.go, compile.go, topology.go) and shows
// up here through those functions; a constraint that fits none of the kinds above needs a new
// method here and its use in pkg/disruption's packer (pack.go).
//
// A Placement is not safe for concurrent use.
type Placement struct {
	s           *solver
	constraints map[int]*TopologyConstraint // by group ID
	poolReqs    map[*NodePool]Requirements
}

// NewPlacement prepares to compile constraints against the input's namespaces, volumes,
// DaemonSets, NodePools and options (its pods and existing nodes are ignored).
func NewPlacement(in *Input) *Placement {
	return &Placement{s: newBareSolver(in), constraints: map[int]*TopologyConstraint{}, poolReqs: map[*NodePool]Requirements{}}
}

// PodPlacement is one pod's constraints as Solve first tries them (no preference relaxed yet).
type PodPlacement struct {
	Pod      *corev1.Pod
	info     podInfo // terms, host ports, ... as Solve compiles them (requests aside)
	cpu, mem int64
	topology []*TopologyConstraint
	key      string
	keyed    bool
	pinned   bool
}

// Pod compiles a pod.
func (pl *Placement) Pod(pod *corev1.Pod) *PodPlacement {
	pp := &PodPlacement{Pod: pod}
	p := &pp.info
	pl.s.initPodInfo(p, pod)
	req := podRequests(pod)
	pp.cpu, pp.mem = quantityValue(corev1.ResourceCPU, req[corev1.ResourceCPU]), quantityValue(corev1.ResourceMemory, req[corev1.ResourceMemory])
	if p.invalid == nil {
		// A selector that does not parse fails the pod in Solve whatever else it requires; the
		// groups compiled before it are listed all the same.
		groups, _ := pl.s.appendTopologyGroups(nil, p)
		for _, g := range groups {
			pp.topology = append(pp.topology, pl.constraint(g))
		}
	}
	return pp
}

func (pl *Placement) constraint(g *topoGroup) *TopologyConstraint {
	c, ok := pl.constraints[g.id]
	if !ok {
		c = &TopologyConstraint{g: g}
		pl.constraints[g.id] = c
	}
	return c
}

// Admits reports whether the node's labels and taints allow the pod, once the solver has relaxed
// every preference: one of the pod's required alternatives is compatible with the labels, and
// the pod tolerates every taint but PreferNoSchedule ones. Solve may still refuse the node for
// room, host ports or topology.
func (pp *PodPlacement) Admits(n *NodePlacement) bool {
	if ToleratesTaints(pp.Pod.Spec.Tolerations, n.taints, false) != nil {
		return false
	}
	for _, t := range pp.info.terms {
		if n.reqs.Compatible(t, nil) == nil {
			return true
		}
	}
	return false
}

// Key identifies what Admits reads of the pod: pods with equal keys are admitted by the same
// nodes. ok is false for a pod that names a hostname, whose admission depends on the node's name,
// which NodePlacement.Shape leaves out.
func (pp *PodPlacement) Key() (key string, ok bool) {
	if !pp.keyed {
		pp.keyed = true
		var b strings.Builder
		for _, t := range pp.info.terms {
			if _, ok := t.Get(LabelHostname); ok {
				pp.pinned = true
				return "", false
			}
			t.writeTo(&b)
			b.WriteByte('|')
		}
		for _, tol := range pp.Pod.Spec.Tolerations {
			for _, s := range []string{tol.Key, string(tol.Operator), tol.Value, string(tol.Effect)} {
				b.WriteString(s)
				b.WriteByte('/')
			}
			b.WriteByte(';')
		}
		pp.key = b.String()
	}
	return pp.key, !pp.pinned
}

// Before reports whether Solve tries pp before o: more cpu first, then more memory, then older.
func (pp *PodPlacement) Before(o *PodPlacement) bool {
	return queueLess(pp.cpu, pp.mem, pp.Pod, o.cpu, o.mem, o.Pod)
}

// HasHostPorts reports whether the pod binds host ports (PortsFree then matters).
func (pp *PodPlacement) HasHostPorts() bool { return len(pp.info.ports) > 0 }

// PortsFree reports whether the pod's host ports are free on the node, given the pods already
// placed there besides those bound to it.
func (pp *PodPlacement) PortsFree(n *NodePlacement, placed []*PodPlacement) bool {
	if len(pp.info.ports) == 0 {
		return true
	}
	if _, c := portsConflict(n.ports, pp.info.ports); c {
		return false
	}
	for _, o := range placed {
		if _, c := portsConflict(o.info.ports, pp.info.ports); c {
			return false
		}
	}
	return true
}

// Topology lists the pod's constraints that count pods across nodes. A pod without any is
// placed by node-local checks and room alone.
func (pp *PodPlacement) Topology() []*TopologyConstraint { return pp.topology }

// MayLaunchFrom reports whether a new node of the pool might take the pod: it tolerates the
// pool's taints (PreferNoSchedule aside) and one of its alternatives, hostname aside, does not
// contradict the pool's labels. Keys the pool leaves open are assumed satisfiable, so the pools
// it admits are a superset of those Solve could use: fit for lower bounds.
func (pl *Placement) MayLaunchFrom(pp *PodPlacement, np *NodePool) bool {
	if ToleratesTaints(pp.Pod.Spec.Tolerations, np.Taints, false) != nil {
		return false
	}
	base, ok := pl.poolReqs[np]
	if !ok {
		base = poolRequirements(np)
		pl.poolReqs[np] = base
	}
	anyKey := func(string) bool { return true }
	for _, t := range pp.info.terms {
		if base.Compatible(t.Without(LabelHostname), anyKey) == nil {
			return true
		}
	}
	return false
}

// TopologyConstraint is one constraint that counts, per domain of a topology key, the pods a
// selector matches anywhere in the cluster. Pods of several constraints with the same selector,
// key and parameters share one.
type TopologyConstraint struct {
	g *topoGroup
}

// ID identifies the constraint: its kind, key, namespaces, selector and parameters.
func (c *TopologyConstraint) ID() string { return c.g.identity }

// Counts reports whether the constraint counts the pod (its namespace and labels match).
func (c *TopologyConstraint) Counts(pod *corev1.Pod) bool { return c.g.matches(pod) }

// String describes the constraint.
func (c *TopologyConstraint) String() string {
	return c.g.kind.String() + " on " + c.g.key + " (selector " + c.g.sel().String() + ")"
}

// RepelsBeyondItsNode reports whether a bound pod keeps pods placed after it out of more than its
// own node: its required anti-affinity has a topology key wider than a hostname.
func RepelsBeyondItsNode(pod *corev1.Pod) bool {
	for _, t := range repelling(pod) {
		if t.TopologyKey != LabelHostname {
			return true
		}
	}
	return false
}

// NodePlacement is an existing node as Solve sees it besides its room: labels (hostname
// included), the taints in force and the host ports its pods take.
type NodePlacement struct {
	Node   *ExistingNode
	reqs   Requirements
	taints []corev1.Taint
	ports  []hostPort
	shape  string
}

// Node compiles an existing node.
func (pl *Placement) Node(n *ExistingNode) *NodePlacement {
	np := &NodePlacement{Node: n}
	_, np.reqs, np.taints = existingView(n)
	bound := false
	for _, p := range n.Pods {
		if occupies(p) {
			bound = true
			np.ports = append(np.ports, podHostPorts(p)...)
		}
	}
	if (!n.Initialized || n.InFlight) && !bound {
		for _, ds := range pl.s.pendingDaemons(np.reqs, np.taints) {
			np.ports = append(np.ports, podHostPorts(ds)...)
		}
	}
	return np
}

// Shape is what Admits and topology domains read of the node, hostname aside: its labels and
// taints. Nodes of one shape admit the same pods and lie in the same domains of every key but
// hostname.
func (np *NodePlacement) Shape() string {
	if np.shape == "" {
		var b strings.Builder
		np.reqs.Without(LabelHostname).writeTo(&b)
		for _, t := range np.taints {
			b.WriteByte('|')
			b.WriteString(t.Key)
			b.WriteByte('=')
			b.WriteString(t.Value)
			b.WriteByte(':')
			b.WriteString(string(t.Effect))
		}
		b.WriteByte('.')
		np.shape = b.String()
	}
	return np.shape
}
