package disruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Partitioned simulation. A consolidation of thousands of nodes moves pods of
// every NodePool at once; in one solve a pod that only fits nodes of one pool
// is tried, in name order, on every node of the other pools with room for it
// before reaching its own, which makes the solve quadratic at 100,000 nodes.
// Pods that can never meet split the question into independent ones, each
// solved on its own nodes. Two pods of the simulation (moving or pending) are
// in one part when
//
//   - one node shape admits both (so they could compete for one node's room),
//   - a NodePool might launch a node for both (they could share a new node,
//     or a pool's limits),
//   - a topology constraint of one counts the other (its placement moves the
//     other's counts), or
//   - a starting node (not a packer target) admits both.
//
// Parts then touch disjoint nodes and claims, read no count the others
// change, and the solver, which tries each pod on its own, places every pod of
// a part exactly as it would with the other parts' pods in the queue: solving
// each part with the nodes its own pods need (simulate.go) gives the combined
// answer. Pods naming a hostname (no shape key), pods with volume claims (a
// claim may be shared across parts) and pools past the 64th (no bit in the
// launch masks) are not split: the simulation is then one solve.

// part is the pods of one part of a simulation, in simulation order.
type part struct {
	reqs   []*podReq
	moving []*corev1.Pod
	sigs   []*podReq // one pod per signature
}

// partition splits the packed pods, or returns nil when they stay together.
func (p *pass) partition(pp *packedPass) []*part {
	pk := p.packer()
	if len(pp.reqs) < 2 || len(p.in.Scheduling.NodePools) == 0 || len(p.in.Scheduling.NodePools) > 64 {
		return nil
	}
	// Elements are pod signatures: pods of one signature are admitted by the
	// same shapes and launch from the same pools.
	elem := map[int]int{}
	var sigs []*podReq // a representative per element
	for _, r := range pp.reqs {
		if r.sig < 0 || hasClaims(r.pod) {
			return nil
		}
		if _, ok := elem[r.sig]; !ok {
			elem[r.sig] = len(sigs)
			sigs = append(sigs, r)
		}
	}
	if len(sigs) < 2 {
		return nil
	}
	uf := newUnionFind(len(sigs))
	// Shapes.
	for _, t := range pk.targets {
		pk.ensure(t)
	}
	for shape := 1; shape <= len(pk.shapeReps); shape++ {
		first := -1
		for i, r := range sigs {
			if pk.compatibleShape(r, shape) {
				if first < 0 {
					first = i
				} else {
					uf.union(first, i)
				}
			}
		}
	}
	// Pools.
	byPool := map[int]int{}
	for i, r := range sigs {
		m := p.poolsFor(r)
		for b := 0; b < 64; b++ {
			if m&(1<<uint(b)) == 0 {
				continue
			}
			if j, ok := byPool[b]; ok {
				uf.union(i, j)
			} else {
				byPool[b] = i
			}
		}
	}
	// Topology: a constraint links its owners with every pod it counts.
	seen := map[string]bool{}
	for _, r := range pp.reqs {
		for _, c := range r.pp.Topology() {
			if seen[c.ID()] {
				continue
			}
			seen[c.ID()] = true
			var owners []int
			for _, o := range pp.reqs {
				for _, oc := range o.pp.Topology() {
					if oc.ID() == c.ID() {
						owners = append(owners, elem[o.sig])
						break
					}
				}
			}
			for _, o := range pp.reqs {
				if c.Counts(o.pod) {
					uf.union(owners[0], elem[o.sig])
				}
			}
			for _, o := range owners[1:] {
				uf.union(owners[0], o)
			}
		}
	}
	// Starting capacity.
	for _, n := range pk.starting {
		if pp.excluded[n] {
			continue
		}
		np := pk.pl.Node(n.Existing)
		first := -1
		for i, r := range sigs {
			if r.pp.Admits(np) {
				if first < 0 {
					first = i
				} else {
					uf.union(first, i)
				}
			}
		}
	}
	partOf := map[int]*part{}
	var parts []*part
	for _, r := range pp.reqs {
		root := uf.find(elem[r.sig])
		pt, ok := partOf[root]
		if !ok {
			pt = &part{}
			partOf[root] = pt
			parts = append(parts, pt)
		}
		pt.reqs = append(pt.reqs, r)
		if sigs[elem[r.sig]] == r {
			pt.sigs = append(pt.sigs, r)
		}
		if pp.moving[r.pod] {
			pt.moving = append(pt.moving, r.pod)
		}
	}
	if len(parts) < 2 {
		return nil
	}
	return parts
}

// hasClaims reports whether the pod mounts a PersistentVolumeClaim (directly
// or as a generic ephemeral volume).
func hasClaims(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u unionFind) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

func (u unionFind) union(a, b int) {
	if ra, rb := u.find(a), u.find(b); ra != rb {
		if ra < rb {
			u[rb] = ra
		} else {
			u[ra] = rb
		}
	}
}

// partUses keeps the used targets that pods of the part can land on.
func (p *pass) partUses(pt *part, used []int) []int {
	pk := p.packer()
	var out []int
	for _, ti := range used {
		t := pk.targets[ti]
		pk.ensure(t)
		for _, r := range pt.sigs {
			if pk.compatibleShape(r, t.shape) {
				out = append(out, ti)
				break
			}
		}
	}
	return out
}

// withoutRoomWhereUnusable shows the nodes no pod of the part may use (other
// pools' nodes, shown for their topology domains and counted pods) with no
// room left: the solver still reads their labels and pods, but its search for
// room skips them instead of trying, and rejecting, each of them for every
// pod. Nodes not among the packer's targets are shown as they are.
func (p *pass) withoutRoomWhereUnusable(existing []*scheduling.ExistingNode, pt *part) []*scheduling.ExistingNode {
	pk := p.packer()
	for i, e := range existing {
		n := p.byName[e.Name]
		if n == nil || n.Existing != e {
			continue
		}
		ti, ok := pk.byNode[n]
		if !ok {
			continue
		}
		t := pk.targets[ti]
		pk.ensure(t)
		usable := false
		for _, r := range pt.sigs {
			if pk.compatibleShape(r, t.shape) {
				usable = true
				break
			}
		}
		if !usable {
			existing[i] = p.roomless(e)
		}
	}
	return existing
}

// roomless is a copy of the node with no room left: its allocatable cpu,
// memory and pod slots are what its pods use. All three, not only the pod
// slots: the solver's room index keeps a maximum per resource over runs of
// nodes in name order, and a node with free cpu but no pod slot among nodes
// with slots but no cpu sends its search down every such run.
func (p *pass) roomless(e *scheduling.ExistingNode) *scheduling.ExistingNode {
	if c, ok := p.full[e]; ok {
		return c
	}
	c := *e
	c.Allocatable = make(corev1.ResourceList, len(e.Allocatable)+1)
	for k, v := range e.Allocatable {
		c.Allocatable[k] = v
	}
	var pods, cpu, mem int64
	for _, pod := range e.Pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		pods++
		rs := requestsView(pod)
		if q, ok := rs[corev1.ResourceCPU]; ok {
			cpu += q.MilliValue()
		}
		if q, ok := rs[corev1.ResourceMemory]; ok {
			mem += q.Value()
		}
	}
	c.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	c.Allocatable[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	c.Allocatable[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	if p.full == nil {
		p.full = map[*scheduling.ExistingNode]*scheduling.ExistingNode{}
	}
	p.full[e] = &c
	return &c
}
