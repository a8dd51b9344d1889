package disruption

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The packer is the fast path of a simulation (simulate.go): it places the
// pods of the candidates, and the pending pods, on the nodes that remain, in
// the solver's own first-fit order (pods by cpu, then memory, then age; nodes
// by name) over resource vectors, node labels, taints and host ports, with
// segment trees finding the first node with room in logarithmic time. A run
// answers in milliseconds what a solve over a large cluster answers in tens to
// hundreds; its placement tells the simulation which nodes the solver needs to
// see, and multi-node consolidation's search probes prefixes with it alone.
//
// The packer knows no constraint of its own: what a pod requires of a node, its
// host ports, its topology constraints and its place in the queue all come from
// scheduling.Placement, which compiles them with the solver's own functions. A
// constraint taught to the solver reaches the packer that way; one that fits
// none of Placement's kinds must be added there and used here.
//
// The packer also prunes: when even its optimistic placement leaves pods that
// no instance type cheaper than the candidates could hold, no solve is needed
// to say no (replacementBound). Pruning can only miss an opportunity, never
// allow an unsafe one: every decision comes from a solve.

const (
	rCPU = iota
	rMemory
	rPods
)

type vec []int64

type resIndex struct {
	pos   map[corev1.ResourceName]int
	names []corev1.ResourceName
}

func newResIndex() *resIndex {
	ri := &resIndex{pos: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		ri.add(n)
	}
	return ri
}

func (ri *resIndex) add(n corev1.ResourceName) int {
	if p, ok := ri.pos[n]; ok {
		return p
	}
	ri.pos[n] = len(ri.names)
	ri.names = append(ri.names, n)
	return ri.pos[n]
}

func qty(n corev1.ResourceName, q resource.Quantity) int64 {
	if n == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// vec converts a list; resources not yet indexed are added (vectors made
// earlier are shorter and read as zero there).
func (ri *resIndex) vec(l corev1.ResourceList) vec {
	for n := range l {
		ri.add(n)
	}
	v := make(vec, len(ri.names))
	for n, q := range l {
		v[ri.pos[n]] = qty(n, q)
	}
	return v
}

func (ri *resIndex) list(v vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		switch ri.names[i] {
		case corev1.ResourceCPU:
			out[ri.names[i]] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		case corev1.ResourceMemory:
			out[ri.names[i]] = *resource.NewQuantity(x, resource.BinarySI)
		default:
			out[ri.names[i]] = *resource.NewQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

func get(v vec, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// fits reports whether req fits in free (both as long as the index).
func fits(req, free vec) bool {
	for i, r := range req {
		if r > 0 && r > get(free, i) {
			return false
		}
	}
	return true
}

// podReq is a pod as the packer sees it.
type podReq struct {
	pod *corev1.Pod
	req vec
	// pp is the pod's constraints as the solver compiles them; nil until the
	// pod is to be placed (most bound pods never are).
	pp *scheduling.PodPlacement
	// sig groups pods that the same nodes admit; -1 when the pod names a
	// hostname, which defeats grouping by node shape.
	sig int
	// sensitive: its placement depends on pods elsewhere in the cluster.
	sensitive bool
}

// target is a node pods may move to: initialized, not going away.
type target struct {
	n     *node
	free  vec
	np    *scheduling.NodePlacement // its own, compiled on first use (nodePlacement)
	shape int                       // numbered shape (ensure), 0 until known
	// class numbers its allocatable cpu, memory and pod slots (newPacker).
	class int
}

// packer holds what the packer reuses across the questions of one pass.
type packer struct {
	pl      *scheduling.Placement
	ri      *resIndex
	targets []*target // solver order
	byNode  map[*node]int
	podReqs map[*corev1.Pod]*podReq
	sigs    map[string]int
	shapes  map[string]int
	// shapeReps holds one compiled node per shape (id-1).
	shapeReps []*scheduling.NodePlacement
	keyBuf    []byte
	compat    map[[2]int]bool
	// free is every target's free capacity as the current packing leaves it;
	// between packings it equals the targets' own free capacity.
	free []vec
	// groups, per pod signature, index the targets compatible with it; they
	// live for the pass and follow free.
	groups map[int]*group
	// memberOf lists, per target, the groups holding it and its position there.
	memberOf [][]membership
	// starting is the capacity the solver may use that is not a target (not
	// initialized yet, or in flight), in name order.
	starting []*node
}

type membership struct {
	g   *subgroup
	pos int
}

// maxClasses bounds the allocatable classes a group is split into (classes
// past it share the last subgroup): a search visits every subgroup.
const maxClasses = 32

func newPacker(p *pass) *packer {
	pk := &packer{pl: scheduling.NewPlacement(p.in.Scheduling), ri: newResIndex(), byNode: map[*node]int{}, podReqs: map[*corev1.Pod]*podReq{},
		sigs: map[string]int{}, shapes: map[string]int{}, compat: map[[2]int]bool{}, groups: map[int]*group{}}
	var ts []*target
	for _, n := range p.nodes {
		if n.Existing == nil || n.Deleting || n.MarkedForDeletion {
			continue
		}
		if n.Existing.InFlight || !n.Existing.Initialized {
			pk.starting = append(pk.starting, n)
			continue
		}
		ts = append(ts, &target{n: n})
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].n.Existing.Name < ts[j].n.Existing.Name })
	for i, t := range ts {
		e := t.n.Existing
		t.free = pk.ri.vec(e.Allocatable)
		if _, ok := e.Allocatable[corev1.ResourcePods]; !ok {
			t.free[rPods] = math.MaxInt32
		}
		for _, pod := range e.Pods {
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			// Read in place, not cached: most bound pods never move, and a
			// podReq each would be a million map entries at 100,000 nodes.
			t.free = pk.subtract(t.free, requestsView(pod))
			t.free[rPods]--
		}
		pk.byNode[t.n] = i
	}
	classes := map[[3]int64]int{}
	for _, t := range ts {
		a := t.n.Existing.Allocatable
		key := [3]int64{qty(corev1.ResourceCPU, a[corev1.ResourceCPU]), qty(corev1.ResourceMemory, a[corev1.ResourceMemory]), qty(corev1.ResourcePods, a[corev1.ResourcePods])}
		c, ok := classes[key]
		if !ok {
			c = min(len(classes), maxClasses-1)
			classes[key] = c
		}
		t.class = c
	}
	pk.targets = ts
	pk.free = make([]vec, len(ts))
	pk.memberOf = make([][]membership, len(ts))
	for i, t := range ts {
		pk.free[i] = append(vec(nil), t.free...)
	}
	return pk
}

// subtract takes the requests from free (grown when a name is new). Lists of
// cpu and memory alone, most pods', are read by lookup: ranging over a map
// costs several times two lookups, for a million bound pods at 100,000 nodes.
func (pk *packer) subtract(free vec, l corev1.ResourceList) vec {
	if len(l) <= 2 {
		cpu, okc := l[corev1.ResourceCPU]
		mem, okm := l[corev1.ResourceMemory]
		if n := btoi(okc) + btoi(okm); n == len(l) {
			if okc {
				free[rCPU] -= cpu.MilliValue()
			}
			if okm {
				free[rMemory] -= mem.Value()
			}
			return free
		}
	}
	for name, q := range l {
		j := pk.ri.add(name)
		if j >= len(free) {
			free = append(free, make(vec, j+1-len(free))...)
		}
		free[j] -= qty(name, q)
	}
	return free
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requestsView is the pod's requests, read in place when a single container
// sets them alone (most pods), computed otherwise: newPacker reads every bound
// pod of the cluster, and a copy each is a million maps at 100,000 nodes. The
// result must not be modified.
func requestsView(pod *corev1.Pod) corev1.ResourceList { return scheduling.PodRequestsView(pod) }

// podReq returns the packer's view of a pod's requests, computed once per pass.
func (pk *packer) podReq(pod *corev1.Pod) *podReq {
	if pr, ok := pk.podReqs[pod]; ok {
		return pr
	}
	pr := &podReq{pod: pod, req: pk.ri.vec(requestsView(pod))}
	pr.req[rPods]++
	pk.podReqs[pod] = pr
	return pr
}

// pod returns the packer's view of a pod to place, constraints compiled.
func (pk *packer) pod(pod *corev1.Pod) *podReq {
	pr := pk.podReq(pod)
	if pr.pp != nil {
		return pr
	}
	pr.pp = pk.pl.Pod(pod)
	pr.sensitive = len(pr.pp.Topology()) > 0
	if k, ok := pr.pp.Key(); ok {
		id, seen := pk.sigs[k]
		if !seen {
			id = len(pk.sigs)
			pk.sigs[k] = id
		}
		pr.sig = id
	} else {
		pr.sig = -1
	}
	return pr
}

// spansNodes reports whether a bound pod's required anti-affinity reaches
// beyond its own node (and so constrains nodes the packer would leave out).
func spansNodes(pod *corev1.Pod) bool { return scheduling.RepelsBeyondItsNode(pod) }

// ensure numbers the target's shape. Nodes with the same labels (hostname
// aside) and taints have the same NodePlacement.Shape, so the key is read from
// the node directly and one NodePlacement per shape is compiled: compiling
// every node's costs seconds at 100,000 nodes, and only the nodes that receive
// pods with host ports, or pods naming a hostname, need their own.
func (pk *packer) ensure(t *target) {
	if t.shape != 0 {
		return
	}
	pk.keyBuf = appendShapeKey(pk.keyBuf[:0], t.n.Existing)
	id, ok := pk.shapes[string(pk.keyBuf)]
	if !ok {
		id = len(pk.shapeReps) + 1
		pk.shapes[string(pk.keyBuf)] = id
		pk.shapeReps = append(pk.shapeReps, pk.nodePlacement(t))
	}
	t.shape = id
}

// nodePlacement compiles the target's own NodePlacement on first use.
func (pk *packer) nodePlacement(t *target) *scheduling.NodePlacement {
	if t.np == nil {
		t.np = pk.pl.Node(t.n.Existing)
	}
	return t.np
}

// appendShapeKey writes what a packer target's NodePlacement is compiled
// from, hostname aside: its labels, taints and startup taints (targets are
// initialized nodes, whose startup taints are in force).
func appendShapeKey(b []byte, e *scheduling.ExistingNode) []byte {
	var stack [32]string
	keys := stack[:0]
	for k := range e.Labels {
		if k != corev1.LabelHostname {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, e.Labels[k]...)
		b = append(b, 0)
	}
	for _, ts := range [][]corev1.Taint{e.Taints, e.StartupTaints} {
		b = append(b, 1)
		for _, t := range ts {
			b = append(b, t.Key...)
			b = append(b, '=')
			b = append(b, t.Value...)
			b = append(b, ':')
			b = append(b, t.Effect...)
			b = append(b, 0)
		}
	}
	return b
}

// compatible: the node admits the pod (labels, taints) as the solver does once
// it has relaxed every preference.
func (pk *packer) compatible(pr *podReq, t *target) bool {
	pk.ensure(t)
	if pr.sig < 0 {
		return pr.pp.Admits(pk.nodePlacement(t))
	}
	return pk.compatibleShape(pr, t.shape)
}

func (pk *packer) compatibleShape(pr *podReq, shape int) bool {
	key := [2]int{pr.sig, shape}
	if ok, hit := pk.compat[key]; hit {
		return ok
	}
	ok := pr.pp.Admits(pk.shapeReps[shape-1])
	pk.compat[key] = ok
	return ok
}

// group is the targets compatible with one pod signature, split by their
// allocatable (class), each part with a segment tree of its members' free cpu,
// memory and pod slots for this packing.
//
// Why split: a tree keeps each resource's maximum over runs of nodes, and a
// run holding one node with cpu to spare and another with memory to spare
// passes for a pod needing both though neither holds it, so a search descends
// into it and fails deep down; across a cluster of mixed instance families a
// search visited about a thousand tree nodes per pod. Nodes of one allocatable
// whose pods are alike use cpu and memory alike, so within a class the maxima
// mostly come from the same node, and a search visits each class's tree along
// one path, bounded by the best target another class already offers.
type group struct {
	subs []*subgroup
}

type subgroup struct {
	idx  []int // target indices, in order
	size int
	tree [3][]int64
}

// group returns the pass-long group of the pod's signature, building it from
// the current free capacity the first time. Pods naming a hostname get a
// throwaway group (persist false).
func (pk *packer) group(pr *podReq) (g *group, persist bool) {
	if g, ok := pk.groups[pr.sig]; ok && pr.sig >= 0 {
		return g, true
	}
	var idx []int
	if pr.sig < 0 {
		for i, t := range pk.targets {
			if pk.compatible(pr, t) {
				idx = append(idx, i)
			}
		}
	} else {
		// Once per shape, not per target.
		byShape := make([]int8, len(pk.shapeReps)+1) // 0 unknown, 1 yes, 2 no
		for i, t := range pk.targets {
			pk.ensure(t)
			if int(t.shape) >= len(byShape) {
				byShape = append(byShape, make([]int8, int(t.shape)+1-len(byShape))...)
			}
			if byShape[t.shape] == 0 {
				byShape[t.shape] = 2
				if pk.compatibleShape(pr, t.shape) {
					byShape[t.shape] = 1
				}
			}
			if byShape[t.shape] == 1 {
				idx = append(idx, i)
			}
		}
	}
	byClass := map[int]*subgroup{}
	g = &group{}
	for _, ti := range idx {
		c := pk.targets[ti].class
		sg, ok := byClass[c]
		if !ok {
			sg = &subgroup{}
			byClass[c] = sg
			g.subs = append(g.subs, sg)
		}
		sg.idx = append(sg.idx, ti)
	}
	for _, sg := range g.subs {
		sg.build(pk.free)
	}
	if pr.sig < 0 {
		return g, false
	}
	pk.groups[pr.sig] = g
	for _, sg := range g.subs {
		for j, ti := range sg.idx {
			pk.memberOf[ti] = append(pk.memberOf[ti], membership{sg, j})
		}
	}
	return g, true
}

func (g *subgroup) build(free []vec) {
	g.size = 1
	for g.size < len(g.idx) {
		g.size *= 2
	}
	for d := range g.tree {
		g.tree[d] = make([]int64, 2*g.size)
		for i := range g.tree[d] {
			g.tree[d][i] = -1
		}
		for j, ti := range g.idx {
			g.tree[d][g.size+j] = get(free[ti], d)
		}
		for i := g.size - 1; i >= 1; i-- {
			g.tree[d][i] = max(g.tree[d][2*i], g.tree[d][2*i+1])
		}
	}
}

func (g *subgroup) update(j int, free vec) {
	for d := range g.tree {
		i := g.size + j
		g.tree[d][i] = get(free, d)
		for i /= 2; i >= 1; i /= 2 {
			g.tree[d][i] = max(g.tree[d][2*i], g.tree[d][2*i+1])
		}
	}
}

// first returns the first target, at index from or after, whose free
// resources hold req (and that ok accepts, when set), or -1.
func (g *group) first(req vec, free []vec, ok func(ti int) bool, from int) int {
	best := -1
	for _, sg := range g.subs {
		until := len(sg.idx)
		if best >= 0 {
			until = sort.SearchInts(sg.idx, best)
		}
		if j := sg.first(req, free, ok, sort.SearchInts(sg.idx, from), until); j >= 0 {
			best = sg.idx[j]
		}
	}
	return best
}

// first returns the first member position in [from, until) whose free
// resources hold req (and that ok accepts, when set), or -1.
func (g *subgroup) first(req vec, free []vec, ok func(ti int) bool, from, until int) int {
	if from >= until {
		return -1
	}
	var walk func(i, lo, hi int) int
	walk = func(i, lo, hi int) int {
		if lo >= until || hi <= from {
			return -1
		}
		for d := range g.tree {
			if g.tree[d][i] < get(req, d) {
				return -1
			}
		}
		if hi-lo == 1 {
			if fits(req, free[g.idx[lo]]) && (ok == nil || ok(g.idx[lo])) {
				return lo
			}
			return -1
		}
		mid := (lo + hi) / 2
		if r := walk(2*i, lo, mid); r >= 0 {
			return r
		}
		return walk(2*i+1, mid, hi)
	}
	return walk(1, 0, g.size)
}

// packing is the outcome of one packer run.
type packing struct {
	used     []int // targets that received pods, ascending
	unplaced []*podReq
}

// pack places pods, in the solver's order, on the first compatible target with
// room, skipping the excluded nodes. It works on the pass-long free capacity
// and group trees and restores them before returning, so that a run costs in
// proportion to the pods it places, not to the size of the cluster.
func (pk *packer) pack(excluded map[*node]bool, pods []*podReq) *packing {
	saved := map[int]vec{}
	var throwaway []*group
	set := func(ti int, f vec) {
		if _, ok := saved[ti]; !ok {
			saved[ti] = append(vec(nil), pk.free[ti]...)
		}
		pk.free[ti] = f
		for _, m := range pk.memberOf[ti] {
			m.g.update(m.pos, f)
		}
		for _, g := range throwaway {
			for _, sg := range g.subs {
				if p, ok := sg.position(ti); ok {
					sg.update(p, f)
				}
			}
		}
	}
	for n := range excluded {
		if ti, ok := pk.byNode[n]; ok {
			f := append(vec(nil), pk.free[ti]...)
			f[rCPU], f[rMemory], f[rPods] = -1, -1, -1
			set(ti, f)
		}
	}
	ordered := append([]*podReq(nil), pods...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].pp.Before(ordered[j].pp) })
	used := map[int]bool{}
	// withPorts lists, per target, the pods with host ports placed there.
	var withPorts map[int][]*scheduling.PodPlacement
	// firstAt is, per pod signature and requests, the target where the last
	// such pod went (-1: nowhere).
	var firstAt map[firstKey]int
	out := &packing{}
	for _, pr := range ordered {
		g, persist := pk.group(pr)
		if !persist {
			throwaway = append(throwaway, g)
		}
		var portsFree func(int) bool
		if pr.pp.HasHostPorts() {
			portsFree = func(ti int) bool { return pr.pp.PortsFree(pk.nodePlacement(pk.targets[ti]), withPorts[ti]) }
		}
		// Free room only shrinks during a packing, so a pod like one placed
		// before (same signature and requests, no host ports) fits no member
		// before where that one went: the search starts there. Pods of a node
		// share their requests, so this skips most of the walk.
		key, cacheable := firstKey{pr.sig, get(pr.req, rCPU), get(pr.req, rMemory), get(pr.req, rPods)}, pr.sig >= 0 && len(pr.req) <= 3 && !pr.pp.HasHostPorts()
		from := 0
		if cacheable {
			if f, ok := firstAt[key]; ok {
				from = f
			}
		}
		ti := -1
		if from >= 0 {
			ti = g.first(pr.req, pk.free, portsFree, from)
		}
		if cacheable {
			if firstAt == nil {
				firstAt = map[firstKey]int{}
			}
			firstAt[key] = ti
		}
		if ti < 0 {
			out.unplaced = append(out.unplaced, pr)
			continue
		}
		f := append(vec(nil), pk.free[ti]...)
		for len(f) < len(pr.req) {
			f = append(f, 0)
		}
		for d, x := range pr.req {
			f[d] -= x
		}
		used[ti] = true
		set(ti, f)
		if pr.pp.HasHostPorts() {
			if withPorts == nil {
				withPorts = map[int][]*scheduling.PodPlacement{}
			}
			withPorts[ti] = append(withPorts[ti], pr.pp)
		}
	}
	throwaway = nil
	for ti, f := range saved {
		pk.free[ti] = f
		for _, m := range pk.memberOf[ti] {
			m.g.update(m.pos, f)
		}
	}
	for ti := range used {
		out.used = append(out.used, ti)
	}
	sort.Ints(out.used)
	return out
}

type firstKey struct {
	sig            int
	cpu, mem, pods int64
}

func (g *subgroup) position(ti int) (int, bool) {
	j := sort.SearchInts(g.idx, ti)
	return j, j < len(g.idx) && g.idx[j] == ti
}

// launchOption is an instance type a replacement could use, for the packer's
// lower bound on a replacement's price.
type launchOption struct {
	name  string
	pool  int // position in Input.Scheduling.NodePools
	alloc vec
	price float64
}

// launchOptions lists, cheapest first, every instance type of every pool that
// may launch and whose labels the pool's requirements allow, with its
// allocatable (capacity minus overhead) and the price of its cheapest
// available offering the pool's requirements allow.
func (p *pass) launchOptions() []launchOption {
	if p.options != nil {
		return p.options
	}
	p.options = []launchOption{}
	for pi, np := range p.in.Scheduling.NodePools {
		for _, it := range np.InstanceTypes {
			if !np.Requirements.Has(scheduling.LabelInstanceType, it.Name) || np.Requirements.Intersects(it.Requirements) != nil {
				continue
			}
			best := math.Inf(1)
			for _, o := range it.Offerings {
				if o.Launchable() && np.Requirements.Has(scheduling.LabelZone, o.Zone) && np.Requirements.Has(scheduling.LabelCapacityType, o.CapacityType) && o.Price < best {
					best = o.Price
				}
			}
			if math.IsInf(best, 1) {
				continue
			}
			p.options = append(p.options, launchOption{name: it.Name, pool: pi, alloc: p.packer().ri.vec(it.Allocatable()), price: best})
		}
	}
	sort.SliceStable(p.options, func(i, j int) bool { return p.options[i].price < p.options[j].price })
	return p.options
}

// poolsFor is the set of launchable pools (bit i: Input.Scheduling.NodePools[i];
// pools past the 64th are always in) a new node for the pod might come from
// (scheduling.Placement.MayLaunchFrom): a superset, as a lower bound needs.
func (p *pass) poolsFor(pr *podReq) uint64 {
	if m, ok := p.poolMasks[pr.sig]; ok && pr.sig >= 0 {
		return m
	}
	pl := p.packer().pl
	var m uint64
	for i, np := range p.in.Scheduling.NodePools {
		if i >= 64 {
			break
		}
		if pl.MayLaunchFrom(pr.pp, np) {
			m |= 1 << uint(i)
		}
	}
	if pr.sig >= 0 {
		p.poolMasks[pr.sig] = m
	}
	return m
}

// replacementBound is the cheapest instance type one new node could use to
// hold all the given pods: a type of a pool every pod may use, whose
// allocatable holds their sum (DaemonSet overhead ignored). It is a lower
// bound on what the solver would find; ok is false, with a reason, when no
// single node can take them.
func (p *pass) replacementBound(pods []*podReq) (launchOption, bool, string) {
	mask := ^uint64(0)
	need := make(vec, len(p.packer().ri.names))
	for _, pr := range pods {
		mask &= p.poolsFor(pr)
		for d, x := range pr.req {
			need[d] += x
		}
	}
	if mask == 0 {
		return launchOption{}, false, "no single nodepool may run all of them on one new node"
	}
	for _, o := range p.launchOptions() {
		if (o.pool >= 64 || mask&(1<<uint(o.pool)) != 0) && fits(need, o.alloc) {
			return o, true, ""
		}
	}
	return launchOption{}, false, fmt.Sprintf("together they need {%s}, more than any instance type offers", scheduling.FormatResources(p.packer().ri.list(need)))
}

// packedPass is a packing of the pods of some candidates (and the pending
// pods) on the other nodes, with what simulate needs to read it.
type packedPass struct {
	*packing
	cands      []*node
	excluded   map[*node]bool
	movingPods []*corev1.Pod
	moving     map[*corev1.Pod]bool
	reqs       []*podReq
	sensitive  bool
}

// packWithout packs the candidates' pods and the pending ones on the other
// nodes. The last packing is kept: multi-node consolidation's search packs a
// prefix and then simulates the same one.
func (p *pass) packWithout(cands []*node) *packedPass {
	if l := p.lastPacked; l != nil && slices.Equal(l.cands, cands) {
		return l
	}
	pk := p.packer()
	pp := &packedPass{cands: append([]*node(nil), cands...), excluded: make(map[*node]bool, len(cands))}
	for _, c := range cands {
		pp.excluded[c] = true
		pp.movingPods = append(pp.movingPods, c.moving...)
	}
	if len(pp.movingPods) == 0 {
		pp.packing = &packing{}
		return pp
	}
	pp.moving = make(map[*corev1.Pod]bool, len(pp.movingPods))
	pp.reqs = make([]*podReq, 0, len(pp.movingPods)+len(p.pending))
	pp.sensitive = len(p.zonalOwners) > 0
	for _, pod := range pp.movingPods {
		pp.moving[pod] = true
		r := pk.pod(pod)
		pp.sensitive = pp.sensitive || r.sensitive
		pp.reqs = append(pp.reqs, r)
	}
	for _, pod := range p.pending {
		r := pk.pod(pod)
		pp.sensitive = pp.sensitive || r.sensitive
		pp.reqs = append(pp.reqs, r)
	}
	pp.packing = pk.pack(pp.excluded, pp.reqs)
	p.lastPacked = pp
	return pp
}
