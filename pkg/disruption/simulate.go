package disruption

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The simulation answers "where would these pods go if these nodes went away?"
// with the solver the provisioner uses (scheduling.Solve), so consolidation
// never assumes a placement provisioning would not make. Solving against every
// node of a large cluster costs tens to hundreds of milliseconds, and a pass may
// ask the question for thousands of candidates, so each question is first
// answered by a packer: the solver's own first-fit order (pods by cpu, then
// memory, then age; nodes by name) over resource vectors, node labels and
// taints, with segment trees finding the first node with room in logarithmic
// time. The packer then picks the nodes the solver needs to see:
//
//   - Pods without topology constraints land, in the solver, on the first node
//     in name order that fits them. Those nodes are exactly the ones the packer
//     used, so the solver runs on those alone and its answer is the one it
//     would give on the whole cluster.
//   - Pods with required affinity, anti-affinity or DoNotSchedule spread depend
//     on pods elsewhere. The solver then also sees every node hosting a pod one
//     of their selectors matches (the counts), one node of every label-and-taint
//     shape (so every topology domain stays known), and every node hosting a
//     pod whose required anti-affinity spans more than its own node (it repels
//     pods from a whole zone). Nodes left out hold no pod any of these
//     constraints counts; the solver's skew minimum for hostname spread is zero
//     whenever a NodePool can launch, so hosts left out change no count it
//     reads. Without a launchable NodePool every node is used.
//
// The packer also prunes: when even its optimistic placement leaves pods that
// no instance type cheaper than the candidates could hold, no solve is needed
// to say no. Pruning can only miss an opportunity, never allow an unsafe one:
// every decision comes from a solve.

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
	// terms are the pod's required alternatives (node selector ∧ one required
	// node affinity term).
	terms []scheduling.Requirements
	// sig groups pods with identical scheduling constraints; -1 when the pod
	// names a hostname, which defeats grouping by node shape.
	sig int
	// sensitive: its placement depends on pods elsewhere in the cluster.
	sensitive bool
}

// target is a node pods may move to: initialized, not going away.
type target struct {
	n      *node
	free   vec
	reqs   scheduling.Requirements // labels with hostname
	taints []corev1.Taint
	shape  int // label (without hostname) and taint signature
}

// packer holds what the packer reuses across the questions of one pass.
type packer struct {
	ri      *resIndex
	targets []*target // solver order
	byNode  map[*node]int
	podReqs map[*corev1.Pod]*podReq
	sigs    map[string]int
	shapes  map[string]int
	compat  map[[2]int]bool
	// free is every target's free capacity as the current packing leaves it;
	// between packings it equals the targets' own free capacity.
	free []vec
	// groups, per pod signature, index the targets compatible with it; they
	// live for the pass and follow free.
	groups map[int]*group
	// memberOf lists, per target, the groups holding it and its position there.
	memberOf [][]membership
}

type membership struct {
	g   *group
	pos int
}

func newPacker(p *pass) *packer {
	pk := &packer{ri: newResIndex(), byNode: map[*node]int{}, podReqs: map[*corev1.Pod]*podReq{},
		sigs: map[string]int{}, shapes: map[string]int{}, compat: map[[2]int]bool{}, groups: map[int]*group{}}
	var ts []*target
	for _, n := range p.nodes {
		if n.Existing == nil || n.Existing.InFlight || !n.Existing.Initialized || n.Deleting || n.MarkedForDeletion {
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
			r := pk.pod(pod).req
			for j, x := range r {
				if j >= len(t.free) {
					t.free = append(t.free, make(vec, j+1-len(t.free))...)
				}
				t.free[j] -= x
			}
		}
		t.taints = append(append([]corev1.Taint(nil), e.Taints...), e.StartupTaints...)
		pk.byNode[t.n] = i
	}
	pk.targets = ts
	pk.free = make([]vec, len(ts))
	pk.memberOf = make([][]membership, len(ts))
	for i, t := range ts {
		pk.free[i] = append(vec(nil), t.free...)
	}
	return pk
}

// pod returns the packer's view of a pod, computed once per pass.
func (pk *packer) pod(pod *corev1.Pod) *podReq {
	if pr, ok := pk.podReqs[pod]; ok {
		return pr
	}
	pr := &podReq{pod: pod, req: pk.ri.vec(scheduling.PodRequests(pod))}
	pr.req[rPods]++
	base := scheduling.FromLabels(pod.Spec.NodeSelector)
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			pr.terms = append(pr.terms, base.Intersect(scheduling.FromNodeSelectorRequirements(t.MatchExpressions...)))
		}
	}
	if len(pr.terms) == 0 {
		pr.terms = []scheduling.Requirements{base}
	}
	pr.sensitive = sensitive(pod)
	pinned := false
	var b strings.Builder
	for _, t := range pr.terms {
		if _, ok := t.Get(scheduling.LabelHostname); ok {
			pinned = true
		}
		b.WriteString(t.String())
		b.WriteByte('|')
	}
	for _, tol := range pod.Spec.Tolerations {
		fmt.Fprintf(&b, "%s/%s/%s/%s;", tol.Key, tol.Operator, tol.Value, tol.Effect)
	}
	if pinned {
		pr.sig = -1
	} else {
		k := b.String()
		id, ok := pk.sigs[k]
		if !ok {
			id = len(pk.sigs)
			pk.sigs[k] = id
		}
		pr.sig = id
	}
	pk.podReqs[pod] = pr
	return pr
}

// sensitive pods' placement depends on other pods: required pod (anti-)affinity
// and topology spread the solver cannot relax.
func sensitive(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			return true
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
	}
	return false
}

// spansNodes reports whether a bound pod's required anti-affinity reaches
// beyond its own node (and so constrains nodes the packer would leave out).
func spansNodes(pod *corev1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey != scheduling.LabelHostname {
				return true
			}
		}
	}
	return false
}

func (pk *packer) ensure(t *target) {
	if t.shape != 0 {
		return
	}
	lbls := t.n.Existing.Labels
	if _, ok := lbls[scheduling.LabelHostname]; !ok {
		cp := make(map[string]string, len(lbls)+1)
		for k, v := range lbls {
			cp[k] = v
		}
		cp[scheduling.LabelHostname] = t.n.Existing.Name
		lbls = cp
	}
	t.reqs = scheduling.FromLabels(lbls)
	var b strings.Builder
	b.WriteString(t.reqs.Without(scheduling.LabelHostname).String())
	for _, tn := range t.taints {
		fmt.Fprintf(&b, "|%s=%s:%s", tn.Key, tn.Value, tn.Effect)
	}
	k := b.String()
	id, ok := pk.shapes[k]
	if !ok {
		id = len(pk.shapes) + 1
		pk.shapes[k] = id
	}
	t.shape = id
}

// compatible: the pod's labels requirements and tolerations admit the target.
// PreferNoSchedule taints are ignored, as the solver does once it relaxes.
func (pk *packer) compatible(pr *podReq, t *target) bool {
	pk.ensure(t)
	key := [2]int{pr.sig, t.shape}
	if pr.sig >= 0 {
		if ok, hit := pk.compat[key]; hit {
			return ok
		}
	}
	ok := scheduling.ToleratesTaints(pr.pod.Spec.Tolerations, t.taints, false) == nil
	if ok {
		ok = false
		for _, term := range pr.terms {
			if t.reqs.Compatible(term, nil) == nil {
				ok = true
				break
			}
		}
	}
	if pr.sig >= 0 {
		pk.compat[key] = ok
	}
	return ok
}

// group is the targets compatible with one pod signature, with a segment tree
// of their free cpu, memory and pod slots for this packing.
type group struct {
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
	for i, t := range pk.targets {
		if pk.compatible(pr, t) {
			idx = append(idx, i)
		}
	}
	g = &group{idx: idx, size: 1}
	for g.size < len(idx) {
		g.size *= 2
	}
	for d := range g.tree {
		g.tree[d] = make([]int64, 2*g.size)
		for i := range g.tree[d] {
			g.tree[d][i] = -1
		}
		for j, ti := range idx {
			g.tree[d][g.size+j] = get(pk.free[ti], d)
		}
		for i := g.size - 1; i >= 1; i-- {
			g.tree[d][i] = max(g.tree[d][2*i], g.tree[d][2*i+1])
		}
	}
	if pr.sig < 0 {
		return g, false
	}
	pk.groups[pr.sig] = g
	for j, ti := range idx {
		pk.memberOf[ti] = append(pk.memberOf[ti], membership{g, j})
	}
	return g, true
}

func (g *group) update(j int, free vec) {
	for d := range g.tree {
		i := g.size + j
		g.tree[d][i] = get(free, d)
		for i /= 2; i >= 1; i /= 2 {
			g.tree[d][i] = max(g.tree[d][2*i], g.tree[d][2*i+1])
		}
	}
}

// first returns the first member position whose free resources hold req, or -1.
func (g *group) first(req vec, free []vec) int {
	var walk func(i, lo, hi int) int
	walk = func(i, lo, hi int) int {
		if lo >= len(g.idx) {
			return -1
		}
		for d := range g.tree {
			if g.tree[d][i] < get(req, d) {
				return -1
			}
		}
		if hi-lo == 1 {
			if fits(req, free[g.idx[lo]]) {
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
			if p, ok := g.position(ti); ok {
				g.update(p, f)
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
	sort.SliceStable(ordered, func(i, j int) bool { return podLess(ordered[i], ordered[j]) })
	used := map[int]bool{}
	out := &packing{}
	for _, pr := range ordered {
		g, persist := pk.group(pr)
		if !persist {
			throwaway = append(throwaway, g)
		}
		j := g.first(pr.req, pk.free)
		if j < 0 {
			out.unplaced = append(out.unplaced, pr)
			continue
		}
		ti := g.idx[j]
		f := append(vec(nil), pk.free[ti]...)
		for len(f) < len(pr.req) {
			f = append(f, 0)
		}
		for d, x := range pr.req {
			f[d] -= x
		}
		used[ti] = true
		set(ti, f)
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

func (g *group) position(ti int) (int, bool) {
	j := sort.SearchInts(g.idx, ti)
	return j, j < len(g.idx) && g.idx[j] == ti
}

// podLess is the solver's queue order: cpu, then memory, descending; then age,
// UID, namespace and name.
func podLess(a, b *podReq) bool {
	if x, y := get(a.req, rCPU), get(b.req, rCPU); x != y {
		return x > y
	}
	if x, y := get(a.req, rMemory), get(b.req, rMemory); x != y {
		return x > y
	}
	ta, tb := a.pod.CreationTimestamp, b.pod.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.pod.UID != b.pod.UID {
		return a.pod.UID < b.pod.UID
	}
	if a.pod.Namespace != b.pod.Namespace {
		return a.pod.Namespace < b.pod.Namespace
	}
	return a.pod.Name < b.pod.Name
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
				if o.Available && np.Requirements.Has(scheduling.LabelZone, o.Zone) && np.Requirements.Has(scheduling.LabelCapacityType, o.CapacityType) && o.Price < best {
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
// pools past the 64th are always in) whose taints the pod tolerates and whose
// requirements its own do not contradict. Keys a pool leaves open are assumed
// satisfiable: the set is a superset, as a lower bound needs.
func (p *pass) poolsFor(pr *podReq) uint64 {
	if m, ok := p.poolMasks[pr.sig]; ok && pr.sig >= 0 {
		return m
	}
	anyKey := func(string) bool { return true }
	var m uint64
	for i, np := range p.in.Scheduling.NodePools {
		if i >= 64 {
			break
		}
		if scheduling.ToleratesTaints(pr.pod.Spec.Tolerations, np.Taints, false) != nil {
			continue
		}
		base := np.Requirements.Intersect(scheduling.FromLabels(np.Labels)).With(scheduling.NewRequirement(scheduling.LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
		for _, term := range pr.terms {
			if base.Compatible(term.Without(scheduling.LabelHostname), anyKey) == nil {
				m |= 1 << uint(i)
				break
			}
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

// simulation is the answer to one "what if these nodes went away" question.
type simulation struct {
	// ok: every pod of the candidates has a place.
	ok bool
	// err names the first pod without one.
	err error
	// replacements are the new claims holding candidates' pods.
	replacements []*scheduling.NewClaim
}

// prune, when set, lets simulate answer no without solving: it receives the
// candidates' pods that the packer could not place on other nodes and returns
// why no acceptable replacement could hold them ("" to go on).
type prune func(pods []*podReq) string

// simulate asks the solver where the candidates' pods go when the candidates
// are gone (pending pods compete for the same room). It returns nil and a
// reason when the packer already knows the answer is no.
func (p *pass) simulate(cands []*node, pr prune) (*simulation, string) {
	pk := p.packer()
	excluded := make(map[*node]bool, len(cands))
	var moving []*corev1.Pod
	for _, c := range cands {
		excluded[c] = true
		moving = append(moving, c.moving...)
	}
	if len(moving) == 0 {
		return &simulation{ok: true}, ""
	}
	isMoving := make(map[*corev1.Pod]bool, len(moving))
	reqs := make([]*podReq, 0, len(moving)+len(p.pending))
	sens := len(p.zonalOwners) > 0
	for _, pod := range moving {
		isMoving[pod] = true
		r := pk.pod(pod)
		sens = sens || r.sensitive
		reqs = append(reqs, r)
	}
	for _, pod := range p.pending {
		r := pk.pod(pod)
		sens = sens || r.sensitive
		reqs = append(reqs, r)
	}
	packed := pk.pack(excluded, reqs)
	if pr != nil {
		var left []*podReq
		for _, u := range packed.unplaced {
			if isMoving[u.pod] {
				left = append(left, u)
			}
		}
		if len(left) > 0 {
			if why := pr(left); why != "" {
				return nil, why
			}
		}
	}
	var existing []*scheduling.ExistingNode
	if sens {
		existing = p.relevant(excluded, packed.used, reqs)
	} else {
		for _, ti := range packed.used {
			existing = append(existing, pk.targets[ti].n.Existing)
		}
	}
	in := *p.in.Scheduling
	in.Pods = append(append(make([]*corev1.Pod, 0, len(moving)+len(p.pending)), moving...), p.pending...)
	in.ExistingNodes = existing
	in.Cache = p.cache
	p.res.Simulations++
	work := len(in.Pods)
	for _, e := range existing {
		work += 1 + len(e.Pods)
	}
	p.res.SimulationWork += work
	results := scheduling.Solve(&in)
	sim := &simulation{ok: true}
	for _, pod := range moving {
		if err, failed := results.PodErrors[pod]; failed {
			sim.ok = false
			sim.err = fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
			return sim, ""
		}
	}
	for _, pl := range results.ExistingNodes {
		if pl.Node.Initialized && !pl.Node.InFlight {
			continue
		}
		for _, pod := range pl.Pods {
			if isMoving[pod] {
				sim.ok = false
				sim.err = fmt.Errorf("pod %s/%s would rely on node %s, which is not initialized yet", pod.Namespace, pod.Name, pl.Node.Name)
				return sim, ""
			}
		}
	}
	for _, c := range results.NewClaims {
		for _, pod := range c.Pods {
			if isMoving[pod] {
				sim.replacements = append(sim.replacements, c)
				break
			}
		}
	}
	return sim, ""
}

// relevant lists the nodes a simulation of sensitive pods must show the solver
// (see the top of this file), in name order.
func (p *pass) relevant(excluded map[*node]bool, used []int, pods []*podReq) []*scheduling.ExistingNode {
	pk := p.packer()
	in := map[*node]bool{}
	add := func(n *node) {
		if n.Existing != nil && !excluded[n] && !n.Deleting && !n.MarkedForDeletion {
			in[n] = true
		}
	}
	all := len(p.in.Scheduling.NodePools) == 0
	for _, pr := range pods {
		if !pr.sensitive {
			continue
		}
		for _, c := range pr.pod.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
				continue
			}
			if c.TopologyKey == scheduling.LabelHostname && len(p.in.Scheduling.NodePools) == 0 {
				all = true
			}
			for _, n := range p.matchingNodes(c.LabelSelector) {
				add(n)
			}
		}
		if a := pr.pod.Spec.Affinity; a != nil {
			var terms []corev1.PodAffinityTerm
			if a.PodAffinity != nil {
				terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
			}
			if a.PodAntiAffinity != nil {
				terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
			}
			for i := range terms {
				for _, n := range p.matchingNodes(terms[i].LabelSelector) {
					add(n)
				}
			}
		}
	}
	var out []*scheduling.ExistingNode
	if all {
		for _, n := range p.nodes {
			add(n)
		}
	} else {
		for _, ti := range used {
			add(pk.targets[ti].n)
		}
		for _, n := range p.zonalOwners {
			add(n)
		}
		// One node of every shape keeps every domain known, and capacity that
		// is not a packer target (starting, in flight) is few and shown as is.
		seen := map[int]bool{}
		for _, n := range p.nodes {
			ti, ok := pk.byNode[n]
			if !ok {
				add(n)
				continue
			}
			if excluded[n] {
				continue
			}
			t := pk.targets[ti]
			pk.ensure(t)
			if !seen[t.shape] {
				seen[t.shape] = true
				add(n)
			}
		}
	}
	for _, n := range p.nodes {
		if in[n] {
			out = append(out, n.Existing)
		}
	}
	return out
}

// matchingNodes lists the nodes hosting an active pod the selector selects (in
// any namespace: a superset of what the constraint counts). A nil or invalid
// selector selects nothing; an empty one everything.
func (p *pass) matchingNodes(ls *metav1.LabelSelector) []*node {
	if ls == nil {
		return nil
	}
	key := ls.String()
	if ns, ok := p.matching[key]; ok {
		return ns
	}
	var out []*node
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err == nil {
		for _, n := range p.nodes {
			for _, pod := range n.Pods() {
				if active(pod) && sel.Matches(labels.Set(pod.Labels)) {
					out = append(out, n)
					break
				}
			}
		}
	}
	p.matching[key] = out
	return out
}
