package scheduling

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// New claims: NodePools prepared per solve, and the NodeClaims a solve opens from them.

// poolState is a NodePool with its per-solve caches.
type poolState struct {
	np          *NodePool
	idx         int
	pp          *preparedPool // shared across solves (Cache): read-only but for its memo
	its         []*InstanceType
	alloc       []resVec // allocatable minus daemonset overhead
	baseMin     resVec   // minAlloc of the base compatible types (shared by new claims)
	fit         *fitTable
	overhead    []resVec // daemonset overhead per instance type
	capacity    []resVec
	portGroups  []portGroup // the types whose daemons bind host ports, by daemon group
	baseReqs    Requirements
	baseID      int32
	limited     []bool // resources with a limit
	remaining   resVec
	compat      map[int32]bitset   // requirement-set ID → instance types compatible by labels & offerings
	ordered     map[int32][]priced // requirement-set ID → compatible types by price
	unordered   map[int32][]priced // requirement-set ID → compatible types and prices, by position (compatible)
	orderOf     map[int32]int32    // requirement-set ID → ID of its ordered list's content
	orderLists  [][]priced         // by order ID: the list
	orderTypes  [][]*InstanceType  // by order ID: the list's types (orderedTypes)
	orderByHash map[uint64][]int32 // hash of a list's content → order IDs with that hash
	domains     map[string][]string
	// knownFn accepts a pod requirement on a key the pool does not constrain when the key is
	// well-known or some instance type of the pool defines it (the node will carry it).
	knownFn   func(string) bool
	baseAvail resVec // max allocatable over compatible types (unlimited pools)
	byName    []int
	// itKeys: the label keys the pool's types (and offerings) define; labelCompat: types
	// admitted by labels, by the requirements on those keys (labelCompatible)
	itKeys      map[string]bool
	labelCompat map[string]bitset
	names       []string // type names in byName's order (sortedNames)
	namesUnique bool     // no two types share a name: a subset of names needs no dedup
	// maxCapacity is the componentwise max capacity over the pool's compatible types.
	maxCapacity resVec
}

func (s *solver) newPool(idx int, np *NodePool) *poolState {
	p := &poolState{np: np, idx: idx, its: np.InstanceTypes, compat: map[int32]bitset{}, ordered: map[int32][]priced{}, domains: map[string][]string{}}
	var pp *preparedPool
	key := ""
	if s.cache != nil {
		key = s.prepKey(np)
		pp = s.cache.get(key)
	}
	if pp != nil {
		// Cached entries are read-only: they may be in use by concurrent solves.
		p.baseReqs, p.itKeys = pp.baseReqs, pp.itKeys
		p.baseID = s.intern(p.baseReqs)
		p.alloc, p.overhead, p.capacity, p.portGroups = pp.alloc, pp.overhead, pp.capacity, pp.portGroups
		p.compat[p.baseID] = pp.baseCompat
		p.ordered[p.baseID] = pp.baseOrdered
		p.byName = pp.byName
	} else {
		pp = s.prepare(np)
		p.baseReqs, p.itKeys = pp.baseReqs, pp.itKeys
		p.baseID = s.intern(p.baseReqs)
		p.alloc, p.overhead, p.capacity, p.portGroups = pp.alloc, pp.overhead, pp.capacity, pp.portGroups
		pp.baseCompat = s.compatible(p, p.baseID)
		pp.baseOrdered = s.ordered(p, p.baseID)
		if s.cache == nil && s.sc != nil {
			p.byName = sortByName(p.its, s.ints.take(len(p.its)), s.vecs.take(len(p.its))) // dies with the solve
		}
		pp.byName = p.nameOrder()
		pp.baseAvail = s.maxAlloc(p, pp.baseCompat)
		if s.cache != nil {
			pp.its = append([]*InstanceType(nil), np.InstanceTypes...)
			pp.ds = append([]*corev1.Pod(nil), s.daemons...)
			pp = s.cache.put(key, pp)
		}
	}
	if s.cache != nil {
		p.pp = pp // its memo serves this and later solves
	}
	itKeys := pp.itKeys
	p.knownFn = func(k string) bool { return s.wellKnown[k] || itKeys[k] }
	p.baseAvail = pp.baseAvail
	if np.Remaining != nil {
		p.limited = make([]bool, len(s.ri.names))
		p.remaining = make(resVec, len(s.ri.names))
		for n, q := range np.Remaining {
			if n == "nodes" {
				continue
			}
			pos := s.ri.pos[n]
			p.limited[pos] = true
			p.remaining[pos] = quantityValue(n, q)
		}
	}
	return p
}

// prepare computes what a NodePool contributes independently of the pods: per-type resource
// vectors (allocatable net of daemonset overhead), the host ports of each type's daemons and
// the label keys its types define.
//
// A type's daemons are the DaemonSet pods a node of the pool and that type would run (they
// tolerate the pool's taints, and their node selector and required node affinity admit the
// pool's labels and the type's), so a DaemonSet that selects arm64 nodes weighs on arm64 types
// only, with its requests and its host ports alike. Types are grouped by their daemons, as
// upstream groups daemon overhead, and each group is worked out once (daemonGrouper).
func (s *solver) prepare(np *NodePool) *preparedPool {
	pp := &preparedPool{itKeys: map[string]bool{}}
	pp.baseReqs = poolRequirements(np)
	its := np.InstanceTypes
	var dsPods []*podInfo
	for _, ds := range s.daemons {
		if ToleratesTaints(ds.Spec.Tolerations, np.Taints, false) != nil {
			continue
		}
		dsPods = append(dsPods, &podInfo{pod: ds, requests: s.ri.vec(podRequests(ds)), podCons: &podCons{ports: podHostPorts(ds)}})
	}
	var dg *daemonGrouper
	if len(dsPods) > 0 {
		dg = newDaemonGrouper(s, pp.baseReqs, dsPods)
	}
	var prevKeys []Requirement
	for _, it := range its {
		// Types of one provider mostly carry the same keys: skip the map when a type's keys
		// are the previous type's.
		if keys := it.Requirements.All(); !sameKeys(keys, prevKeys) {
			for _, r := range keys {
				pp.itKeys[r.Key] = true
			}
			prevKeys = keys
		}
		for _, o := range it.Offerings {
			for _, r := range o.Requirements.All() {
				pp.itKeys[r.Key] = true
			}
		}
	}
	// One slab backs every per-type vector: a pool of 400 types costs four allocations here.
	// Without a Cache the prepared pool dies with the solve: its vectors come from the solve's
	// scratch (scratch.go).
	n := len(s.ri.names)
	var slab resVec
	if s.cache == nil && s.sc != nil {
		slab = s.vecs.take(3 * n * len(its))
		hdrs := s.vecHdrs.take(3 * len(its))
		pp.alloc, pp.overhead, pp.capacity = hdrs[:len(its)], hdrs[len(its):2*len(its)], hdrs[2*len(its):]
	} else {
		slab = make(resVec, 3*n*len(its))
		pp.alloc = make([]resVec, len(its))
		pp.overhead = make([]resVec, len(its))
		pp.capacity = make([]resVec, len(its))
	}
	for i, it := range its {
		capv, alloc, over := slab[(3*i)*n:(3*i+1)*n:(3*i+1)*n], slab[(3*i+1)*n:(3*i+2)*n:(3*i+2)*n], slab[(3*i+2)*n:(3*i+3)*n:(3*i+3)*n]
		capHas, ok := s.ri.fillBuiltin(capv, it.Capacity)
		if !ok {
			s.ri.fill(capv, it.Capacity)
		}
		copy(alloc, capv)
		// The overhead is read into over (zero until the daemonsets below) and taken back out.
		if ovHas, ok := s.ri.fillBuiltin(over, it.Overhead); ok {
			for r := range numBuiltinResources {
				if ovHas&capHas&(1<<r) != 0 {
					alloc[r] -= over[r]
				}
				over[r] = 0
			}
		} else {
			clear(over)
			for name, q := range it.Overhead {
				if pos, ok := s.ri.pos[name]; ok && it.Capacity != nil {
					if _, has := it.Capacity[name]; has {
						alloc[pos] -= quantityValue(name, q)
					}
				}
			}
		}
		if dg != nil {
			copy(over, dg.groupOf(i, it).over)
			alloc.sub(over)
		}
		pp.alloc[i], pp.overhead[i], pp.capacity[i] = alloc, over, capv
	}
	if dg != nil {
		pp.portGroups = dg.portGroups(len(its))
	}
	return pp
}

// daemonGrouper sorts a pool's instance types into groups by the daemons a node of the type
// would run. Whether a daemon runs on a type depends only on the type's requirements on the
// keys the daemons select on (and on its name, when they select on it), so the types are first
// told apart by those alone: a catalog of hundreds of types whose daemons select on the
// architecture is judged twice, once per architecture.
type daemonGrouper struct {
	s      *solver
	base   Requirements
	pods   []*podInfo
	keys   []string         // keys the daemons' selectors and required node affinities name, sorted
	byView map[string]int32 // a type's requirements on keys → its group
	byPods map[string]int32 // the daemons of a group (bits by position in pods) → the group
	groups []daemonGroup
	buf    []byte
}

// daemonGroup is a set of daemons that run together on some of the pool's types.
type daemonGroup struct {
	over  resVec // their requests, plus one pod each
	ports []hostPort
	types []int // the pool's types in the group, when it binds host ports
}

// portGroup is a daemon group that binds host ports, with its types: a pod binding one of the
// ports cannot go to a node of those types.
type portGroup struct {
	ports []hostPort
	types bitset
}

func newDaemonGrouper(s *solver, base Requirements, pods []*podInfo) *daemonGrouper {
	g := &daemonGrouper{s: s, base: base, pods: pods, byView: map[string]int32{}, byPods: map[string]int32{}}
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			g.keys = append(g.keys, k)
		}
	}
	for _, d := range pods {
		for k := range d.pod.Spec.NodeSelector {
			add(k)
		}
		if a := d.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, e := range t.MatchExpressions {
					add(e.Key)
				}
			}
		}
	}
	sort.Strings(g.keys)
	return g
}

// groupOf returns the group of the pool's type i, it.
func (g *daemonGrouper) groupOf(i int, it *InstanceType) *daemonGroup {
	view := g.buf[:0]
	for _, k := range g.keys {
		if k == LabelInstanceType {
			view = append(view, it.Name...)
		} else if r, ok := it.Requirements.Get(k); ok {
			view = r.appendKey(append(view, '+'))
		} else {
			view = append(view, '-')
		}
		view = append(view, 0)
	}
	g.buf = view
	gi, ok := g.byView[string(view)]
	if !ok {
		gi = g.judge(it)
		g.byView[string(view)] = gi
	}
	grp := &g.groups[gi]
	if len(grp.ports) > 0 {
		grp.types = append(grp.types, i)
	}
	return grp
}

// judge finds the daemons that run on a node of the pool and type it, and returns their group.
func (g *daemonGrouper) judge(it *InstanceType) int32 {
	node := typeNodeRequirements(g.base, it)
	runs := newBitset(len(g.pods))
	for j, d := range g.pods {
		if daemonCompatible(d.pod, node, g.s.wellKnownFn) {
			runs.set(j)
		}
	}
	key := make([]byte, 0, 8*len(runs))
	for _, w := range runs {
		key = binary.LittleEndian.AppendUint64(key, w)
	}
	if gi, ok := g.byPods[string(key)]; ok {
		return gi
	}
	grp := daemonGroup{over: make(resVec, len(g.s.ri.names))}
	runs.forEach(func(j int) {
		grp.over.add(g.pods[j].requests)
		grp.over[resPods]++
		grp.ports = append(grp.ports, g.pods[j].ports...)
	})
	g.groups = append(g.groups, grp)
	gi := int32(len(g.groups) - 1)
	g.byPods[string(key)] = gi
	return gi
}

// portGroups lists the groups that bind host ports, each with its types among the pool's n.
func (g *daemonGrouper) portGroups(n int) []portGroup {
	var out []portGroup
	for _, grp := range g.groups {
		if len(grp.ports) == 0 {
			continue
		}
		pg := portGroup{ports: grp.ports, types: newBitset(n)}
		for _, i := range grp.types {
			pg.types.set(i)
		}
		out = append(out, pg)
	}
	return out
}

// daemonPortConflicts returns the pool's types whose daemons bind one of the ports (nil when
// none does), and the first of the ports that a daemon binds.
func (s *solver) daemonPortConflicts(p *poolState, ports []hostPort) (bitset, hostPort) {
	var out bitset
	var first hostPort
	for gi := range p.portGroups {
		pg := &p.portGroups[gi]
		hp, c := portsConflict(pg.ports, ports)
		if !c {
			continue
		}
		if out == nil {
			out, first = bitset(s.bits.take(len(pg.types))), hp
		}
		for w := range out {
			out[w] |= pg.types[w]
		}
	}
	return out, first
}

// sameKeys reports whether two key-sorted requirement lists constrain the same keys.
func sameKeys(a, b []Requirement) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key {
			return false
		}
	}
	return true
}

// poolRequirements are the labels every node of the pool has or may have: the pool's
// requirements, its template labels and its name.
func poolRequirements(np *NodePool) Requirements {
	return np.Requirements.Intersect(FromLabels(np.Labels)).With(NewRequirement(LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
}

// daemonCompatible reports whether a DaemonSet pod would run on a node with these labels:
// its node selector and one of its required node affinity terms must be satisfiable.
func daemonCompatible(pod *corev1.Pod, node Requirements, wellKnown func(string) bool) bool {
	base := FromLabels(pod.Spec.NodeSelector)
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if node.Compatible(base.Intersect(FromNodeSelectorRequirements(t.MatchExpressions...)), wellKnown) == nil {
				return true
			}
		}
		return false
	}
	return node.Compatible(base, wellKnown) == nil
}

// tryNewClaim opens a claim from a NodePool for the pod.
func (s *solver) tryNewClaim(a *attempt, p *poolState) (*target, plan, error) {
	if err := a.poolErr[p.idx]; err != nil {
		return nil, plan{}, err
	}
	if q, ok := p.np.Remaining["nodes"]; ok && s.claimsOf(p) >= q.Value() {
		return nil, plan{}, fmt.Errorf("exceeds nodepool limits (nodes: %s)", q.String())
	}
	// Claims and their usage vectors live in the solve's scratch: results copies out what it keeps.
	t := &s.claimSlab.take(1)[0]
	*t = target{idx: len(s.targets), pool: p, reqs: p.baseReqs, reqID: p.baseID, used: resVec(s.vecs.take(len(s.ri.names)))}
	t.hostname = p.np.Name + "-placeholder-" + strconv.Itoa(s.claimSeq)
	if p.limited == nil || s.limitsCannotBind(p) {
		if p.baseAvail == nil {
			p.baseAvail = s.maxAlloc(p, s.compatible(p, p.baseID))
		}
		t.its = s.compatible(p, p.baseID)
		t.avail = p.baseAvail
		if p.baseMin == nil {
			p.baseMin = s.minAlloc(p, t.its)
		}
		t.minAvail = p.baseMin
	} else if err := s.limitTypes(t, p); err != nil {
		return nil, plan{}, err
	}
	if a.hostReq != nil && !a.hostReq.Has(t.hostname) {
		return nil, plan{}, fmt.Errorf("requires %s %s, which a new node cannot have", LabelHostname, a.hostReq.String())
	}
	if !sumFitsIn(t.used, a.p.requests, t.avail) {
		return nil, plan{}, s.explainTypes(t, p.baseID, a.p.requests)
	}
	m := s.merge(t, a.reqID)
	if m.err != nil {
		return nil, plan{}, m.err
	}
	for _, og := range a.own {
		if og.g.hostname && !s.domainAllowed(a, og, t, t.hostname) {
			return nil, plan{}, og.g.rejection()
		}
	}
	pl, err := s.claimTopologyAndTypes(a, t, m.merged)
	if err != nil {
		return nil, plan{}, err
	}
	s.claimSeq++
	return t, pl, nil
}

// claimTopologyAndTypes is topologyAndTypes for a claim, whose types are first narrowed, for a
// pod binding host ports, to those whose daemons bind none of the pod's ports.
func (s *solver) claimTopologyAndTypes(a *attempt, t *target, merged int32) (plan, error) {
	if len(a.p.ports) == 0 || len(t.pool.portGroups) == 0 {
		return s.topologyAndTypes(a, t, merged)
	}
	its, err := s.portTypes(t, a.p.ports)
	if err != nil || its == nil {
		if err != nil {
			return plan{}, err
		}
		return s.topologyAndTypes(a, t, merged)
	}
	// The claim takes the narrowed types only if the pod joins it (commit).
	kept, keptMin := t.its, t.minAvail
	t.its, t.minAvail = its, nil
	pl, err := s.topologyAndTypes(a, t, merged)
	t.its, t.minAvail = kept, keptMin
	return pl, err
}

// portTypes returns claim t's types whose daemons bind none of the ports, nil when that is all
// of them, and an error when it is none.
func (s *solver) portTypes(t *target, ports []hostPort) (bitset, error) {
	ex, hp := s.daemonPortConflicts(t.pool, ports)
	if ex == nil {
		return nil, nil
	}
	hit, left := false, false
	for w := range ex {
		if t.its[w]&ex[w] != 0 {
			hit = true
		}
		if t.its[w]&^ex[w] != 0 {
			left = true
		}
	}
	switch {
	case !hit:
		return nil, nil
	case !left:
		return nil, fmt.Errorf("host port %s conflicts with a daemonset", hp)
	}
	out := ex // from the scratch, used once
	for w := range out {
		out[w] = t.its[w] &^ ex[w]
	}
	return out, nil
}

// limitsCannotBind reports whether even the largest compatible type fits the remaining limits,
// in which case the limit filter would keep every type.
func (s *solver) limitsCannotBind(p *poolState) bool {
	if p.maxCapacity == nil {
		p.maxCapacity = make(resVec, len(s.ri.names))
		s.compatible(p, p.baseID).forEach(func(i int) {
			for r, v := range p.capacity[i] {
				if v > p.maxCapacity[r] {
					p.maxCapacity[r] = v
				}
			}
		})
	}
	for r, lim := range p.limited {
		if lim && p.maxCapacity[r] > p.remaining[r] {
			return false
		}
	}
	return true
}

// limitTypes gives a new claim the pool's compatible types whose capacity fits the remaining
// limits (the claim reserves its largest candidate, as upstream does).
func (s *solver) limitTypes(t *target, p *poolState) error {
	all := s.compatible(p, p.baseID).clone()
	within := false
	all.forEach(func(i int) {
		for r, lim := range p.limited {
			if lim && p.capacity[i][r] > p.remaining[r] {
				all.clear(i)
				return
			}
		}
		within = true
	})
	if !within {
		return fmt.Errorf("exceeds nodepool limits (remaining %s)", FormatResources(s.remainingList(p)))
	}
	t.its = all
	t.avail = s.maxAlloc(p, all)
	return nil
}

func (s *solver) remainingList(p *poolState) corev1.ResourceList {
	out := corev1.ResourceList{}
	for r, lim := range p.limited {
		if lim {
			v := make(resVec, len(p.remaining))
			v[r] = p.remaining[r]
			q, ok := s.ri.list(v)[s.ri.names[r]]
			if !ok {
				q = *resource.NewQuantity(0, resource.DecimalSI)
			}
			out[s.ri.names[r]] = q
		}
	}
	return out
}

func (s *solver) claimsOf(p *poolState) int64 {
	n := int64(0)
	for _, t := range s.targets[s.numExisting:] {
		if t.pool == p {
			n++
		}
	}
	return n
}

// claimTypes is the instance-type part of a claim's result. Claims whose requirement set and
// candidate types are equal share one (the slices are read-only).
type claimTypes struct {
	its      []*InstanceType
	names    []string
	price    float64
	overhead corev1.ResourceList
}

// newClaim fills in c, the result of claim t.
func (s *solver) newClaim(c *NewClaim, t *target) {
	*c = NewClaim{Hostname: t.hostname, NodePool: t.pool.np, Pods: t.pods, MinValuesRelaxed: t.relaxed}
	// Claims with equal requests share one read-only list: a solve opening thousands of
	// one-pod claims (hostname anti-affinity) builds a few dozen lists, not a map per claim.
	rk := s.keyBuf[:0]
	for _, x := range t.used {
		rk = binary.LittleEndian.AppendUint64(rk, uint64(x))
	}
	s.keyBuf = rk
	if l, ok := s.requestLists[string(rk)]; ok {
		c.Requests = l
	} else {
		c.Requests = s.ri.list(t.used)
		if s.requestLists == nil {
			s.requestLists = map[string]corev1.ResourceList{}
		}
		s.requestLists[string(rk)] = c.Requests
	}
	// Without minValues a claim's types depend only on the price order of its requirement
	// set's compatible types and on its candidates: claims whose requirement sets differ (in
	// pinned domains, say) but order the types alike share one claimTypes.
	tag, id := byte('r'), t.reqID
	if !s.hasMin[t.reqID] {
		tag, id = 'o', s.orderID(t.pool, t.reqID) // before the key: it uses keyBuf too
	}
	key := append(s.keyBuf[:0], tag)
	key = binary.LittleEndian.AppendUint32(key, uint32(t.pool.idx))
	key = binary.LittleEndian.AppendUint32(key, uint32(id))
	for _, w := range t.its {
		key = binary.LittleEndian.AppendUint64(key, w)
	}
	s.keyBuf = key
	ct, ok := s.claimTypes[string(key)]
	if !ok {
		k := string(key) // memoChooseTypes reuses keyBuf
		ct = s.memoChooseTypes(t)
		s.claimTypes[k] = ct
	}
	c.InstanceTypes, c.Price, c.DaemonSetOverhead = ct.its, ct.price, ct.overhead
	// Requirements are immutable: claims with the same set and types share them.
	rq := claimReqsKey{t.reqID, ct}
	if r, ok := s.claimReqs[rq]; ok {
		c.Requirements = r
	} else {
		c.Requirements = t.reqs.With(Requirement{Key: LabelInstanceType, values: ct.names})
		if s.claimReqs == nil {
			s.claimReqs = map[claimReqsKey]Requirements{}
		}
		s.claimReqs[rq] = c.Requirements
	}
}

// memoChooseTypes is chooseTypes, memoized across solves in the pool's memo by requirement
// set, cap and candidates (chooseTypes reads nothing else but the instance types): a claim's
// list of up to MaxInstanceTypes types and names is most of what a solve would allocate.
func (s *solver) memoChooseTypes(t *target) *claimTypes {
	memo, rk := t.pool.memo(), s.reqKeys[t.reqID]
	if memo == nil || rk == uniqueKey {
		return s.chooseTypes(t)
	}
	key := binary.LittleEndian.AppendUint32(s.keyBuf[:0], uint32(s.opts.MaxInstanceTypes))
	key = binary.LittleEndian.AppendUint32(key, uint32(len(t.its)))
	for _, w := range t.its {
		key = binary.LittleEndian.AppendUint64(key, w)
	}
	key = append(key, rk...)
	s.keyBuf = key
	if ct, ok := memoGet(memo, &memo.claimTypes, string(key)); ok {
		return ct
	}
	k := string(key)
	ct := s.chooseTypes(t)
	memoPut(memo, &memo.claimTypes, k, ct, 8*len(ct.its)+16*len(ct.names)+64)
	return ct
}

// claimReqsKey identifies a claim's result requirements: its requirement set and its types.
type claimReqsKey struct {
	reqID int32
	ct    *claimTypes
}
