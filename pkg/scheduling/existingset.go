package scheduling

import (
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// ExistingSet is existing nodes read once for several solves. A disruption pass asks the
// solver many questions about one snapshot of the cluster, each with some nodes left out (the
// candidates) and the others shown: reading the shown nodes' pods again for every question
// (their requests, host ports, labels) costs more than the questions themselves at 100,000
// nodes. A set reads each node's bound pods once, and keeps what later solves ask of them:
// the bound pods' label index and each node's shape (labels other than the hostname, and taints)
// with the shape's compiled labels.
//
// Usage: prepare once, solve many.
//
//	set := scheduling.PrepareExisting(allNodes)
//	in := base // an Input without ExistingNodes
//	in.Prepared = set
//	in.ExistingNodes = shown // any subset of allNodes, in any order (plus nodes not in the set)
//	res := scheduling.Solve(&in)
//
// Input.ExistingNodes stays the list of nodes a solve may use; Prepared only saves reading
// them. Nodes of ExistingNodes that are not in the set (or are changed copies of its nodes:
// membership is by pointer) are read for that solve alone. The result is the same as without
// Prepared. The nodes and their pods must not change while the set is in use, and a set is not
// safe for concurrent solves (it fills its caches as solves ask).
type ExistingSet struct {
	nodes []*preparedNode // the solver's order: ready nodes first, then by name
	pos   map[*ExistingNode]int32
	ri    *resourceIndex // positions of avail and used: builtins, then every allocatable name
	own   bool           // one solve's own nodes (see prepareExisting)

	// labels indexes bound pods by label key (boundRef.t is a position in nodes): the keys a
	// fresh solve's pending pods name while the pods are first read, others when a topology
	// group first asks (indexKeys).
	labels   map[string]*labelRefs
	repelers []boundRef // bound pods with required anti-affinity, in node then pod order
	all      int        // number of bound pods

	// While nodes are added: the eagerly indexed keys and their lists, and slabs.
	keys   []string
	eager  []*labelRefs
	pnSlab []preparedNode
	vecs   slab[int64]
	// The last allocatable list read, and its vector.
	lastAlloc unsafe.Pointer
	lastAvail []int64

	shapes      map[string]int32 // shape key -> index in shapeReqs
	shapeReqs   []Requirements
	shapeTaints [][]corev1.Taint
	keyBuf      []byte
}

// preparedNode is what the solver reads of an existing node besides its labels.
type preparedNode struct {
	n        *ExistingNode
	hostname string
	taints   []corev1.Taint // in force (see existingTaints)
	avail    []int64        // allocatable, by the set's resource positions
	used     []int64        // requests of the bound pods, by the set's positions
	// extra holds requests of bound pods for resources no node of the set has allocatable
	// (rare: nil otherwise). A solve that knows such a name counts them as used, which keeps
	// the node from taking pods, as it would without a set.
	extra map[corev1.ResourceName]int64
	bound []*corev1.Pod // the pods that take room (capped: appends copy)
	ports []hostPort    // capped likewise
	shape int32         // 1 + index in the set's shapes, 0 until first asked (shapeOf)
}

// PrepareExisting reads the nodes (their allocatable, taints and bound pods) for several solves:
// see ExistingSet.
func PrepareExisting(nodes []*ExistingNode) *ExistingSet {
	return prepareExisting(nodes, nil)
}

// existingOrder is the order the solver tries existing nodes in: initialized nodes first, then
// by name.
func existingOrder(a, b *ExistingNode) int {
	ra, rb := a.Initialized && !a.InFlight, b.Initialized && !b.InFlight
	if ra != rb {
		if ra {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// sortedExisting returns the nodes in existingOrder (a copy; the input is not modified).
func sortedExisting(in []*ExistingNode) []*ExistingNode {
	nodes := append([]*ExistingNode(nil), in...)
	// Callers usually list nodes by name already: checking is linear, sorting is not.
	if !slices.IsSortedFunc(nodes, existingOrder) {
		slices.SortStableFunc(nodes, existingOrder)
	}
	return nodes
}

// prepareExisting reads the nodes, indexing the bound pods' labels of the given keys on the
// way (a fresh solve passes the keys its pending pods' selectors name).
func prepareExisting(in []*ExistingNode, wanted []wantedKey) *ExistingSet {
	nodes := sortedExisting(in)
	set := newExistingSet(nil, len(nodes), wanted)
	set.pos = make(map[*ExistingNode]int32, len(nodes))
	for _, n := range nodes {
		set.ri.register(n.Allocatable)
	}
	for _, n := range nodes {
		set.add(n)
	}
	return set
}

// newExistingSet starts an empty set. With a solver (own), the set is that solve's own, for the
// nodes it does not take from a prepared set: the solver adds them in existingOrder, each just
// before it becomes a target (its pods are still in cache), the vectors use the solver's resource
// positions and are the targets' own (no copy), and no lookup by node is kept.
func newExistingSet(own *solver, capacity int, wanted []wantedKey) *ExistingSet {
	set := &ExistingSet{
		nodes:  make([]*preparedNode, 0, capacity),
		labels: map[string]*labelRefs{},
		shapes: map[string]int32{},
	}
	if own != nil {
		set.ri, set.own = own.ri, true
	} else {
		set.ri = newResourceIndex()
	}
	set.keys = make([]string, len(wanted))
	set.eager = make([]*labelRefs, len(wanted))
	for i, w := range wanted {
		set.keys[i] = w.key
		set.eager[i] = &labelRefs{}
		if !w.all {
			set.eager[i].only = newValueSet(w.values)
		}
		set.labels[w.key] = set.eager[i]
	}
	return set
}

// add reads one more node into the set and returns its position.
func (set *ExistingSet) add(n *ExistingNode) int32 {
	if len(set.pnSlab) == 0 {
		set.pnSlab = make([]preparedNode, slabChunk)
	}
	pn := &set.pnSlab[0]
	set.pnSlab = set.pnSlab[1:]
	idx := int32(len(set.nodes))
	if _, dup := set.pos[n]; !dup && !set.own { // listed twice: the solver reads the second on its own
		set.pos[n] = idx
	}
	set.nodes = append(set.nodes, pn)
	width := len(set.ri.names)
	set.read(pn, n, idx, set.keys, set.eager, set.vecs.take(width), set.vecs.take(width))
	return idx
}

// read fills pn from n: one pass over the bound pods for requests, host ports, possible
// anti-affinity owners and the eagerly indexed label keys.
func (set *ExistingSet) read(pn *preparedNode, n *ExistingNode, idx int32, keys []string, eager []*labelRefs, avail, used []int64) {
	pn.n = n
	pn.hostname = existingHostname(n)
	pn.taints = existingTaints(n)
	// Nodes of one type often share one allocatable list (the state interns them): it is read
	// once per run of such nodes.
	if m := reflect.ValueOf(n.Allocatable).UnsafePointer(); m != nil && m == set.lastAlloc {
		copy(avail, set.lastAvail)
	} else {
		set.ri.fill(avail, n.Allocatable)
		if _, ok := n.Allocatable[corev1.ResourcePods]; !ok {
			avail[resPods] = math.MaxInt64 / 4
		}
		set.lastAlloc, set.lastAvail = m, avail
	}
	pn.avail, pn.used = avail, used
	// The input's pod slice serves as the bound pods unless some have finished (capped, so
	// that an append could never write into it).
	pn.bound = n.Pods[:len(n.Pods):len(n.Pods)]
	for i, p := range n.Pods {
		if !occupies(p) {
			pn.bound = nil
			for _, p := range n.Pods[:i] {
				pn.bound = append(pn.bound, p)
			}
			for _, p := range n.Pods[i:] {
				if occupies(p) {
					pn.bound = append(pn.bound, p)
				}
			}
			pn.bound = pn.bound[:len(pn.bound):len(pn.bound)]
			break
		}
	}
	for i, p := range pn.bound {
		set.addRequests(pn, p)
		used[resPods]++
		if ports := podHostPorts(p); len(ports) > 0 {
			pn.ports = append(pn.ports, ports...)
		}
		ref := boundRef{idx, int32(i)}
		if len(repelling(p)) > 0 {
			set.repelers = append(set.repelers, ref)
		}
		if len(p.Labels) > 0 {
			for ki, k := range keys {
				if v, ok := p.Labels[k]; ok && eager[ki].only.has(v) {
					eager[ki].add(v, ref)
				}
			}
		}
	}
	pn.ports = pn.ports[:len(pn.ports):len(pn.ports)]
	set.all += len(pn.bound)
}

// addRequests adds a bound pod's requests to the node's usage. cpu and memory, which nearly
// every pod requests, are looked up directly: ranging over the request map of each of a million
// bound pods costs more than the rest of a node's set-up.
func (set *ExistingSet) addRequests(pn *preparedNode, p *corev1.Pod) {
	req := podRequests(p)
	seen := 0
	if q, ok := req[corev1.ResourceCPU]; ok {
		pn.used[resCPU] += q.MilliValue()
		seen++
	}
	if q, ok := req[corev1.ResourceMemory]; ok {
		pn.used[resMemory] += q.Value()
		seen++
	}
	if len(req) == seen {
		return
	}
	for n, q := range req {
		if n == corev1.ResourceCPU || n == corev1.ResourceMemory {
			continue
		}
		if i, ok := set.ri.pos[n]; ok {
			pn.used[i] += quantityValue(n, q)
			continue
		}
		if pn.extra == nil {
			pn.extra = map[corev1.ResourceName]int64{}
		}
		pn.extra[n] += quantityValue(n, q)
	}
}

// shapeOf returns the index of the node's shape: its labels other than the hostname, and its
// taints in force. Nodes of one shape admit the same pods (hostname requirements aside), so
// their labels are compiled, and checked against a pod, once per shape.
func (set *ExistingSet) shapeOf(pn *preparedNode) int32 {
	if pn.shape > 0 {
		return pn.shape - 1
	}
	b := appendLabelsKey(set.keyBuf[:0], pn.n.Labels)
	for _, t := range pn.taints {
		b = append(b, 1)
		b = append(b, t.Key...)
		b = append(b, '=')
		b = append(b, t.Value...)
		b = append(b, ':')
		b = append(b, t.Effect...)
	}
	set.keyBuf = b
	id, ok := set.shapes[string(b)]
	if !ok {
		id = int32(len(set.shapeReqs))
		set.shapes[string(b)] = id
		set.shapeReqs = append(set.shapeReqs, FromLabels(pn.n.Labels).Without(LabelHostname))
		set.shapeTaints = append(set.shapeTaints, pn.taints)
	}
	pn.shape = id + 1
	return id
}

// appendLabelsKey writes the labels but the hostname, sorted by key.
func appendLabelsKey(b []byte, labels map[string]string) []byte {
	var stack [32]string
	keys := stack[:0]
	for k := range labels {
		if k != LabelHostname {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, labels[k]...)
		b = append(b, 0)
	}
	return b
}

// indexKeys indexes the given label keys (those not indexed yet) in one pass over the bound
// pods.
func (set *ExistingSet) indexKeys(keys []string) {
	var todo []string
	var lists []*labelRefs
	for _, k := range keys {
		if _, ok := set.labels[k]; ok || slices.Contains(todo, k) {
			continue
		}
		l := &labelRefs{}
		set.labels[k] = l
		todo = append(todo, k)
		lists = append(lists, l)
	}
	if len(todo) == 0 {
		return
	}
	for ni, pn := range set.nodes {
		for pi, p := range pn.bound {
			if len(p.Labels) == 0 {
				continue
			}
			for ki, k := range todo {
				if v, ok := p.Labels[k]; ok {
					lists[ki].add(v, boundRef{int32(ni), int32(pi)})
				}
			}
		}
	}
}

// valueRefs returns the bound pods carrying key=val, by set position (the key is indexed).
func (set *ExistingSet) valueRefs(key, val string) []boundRef {
	l := set.labels[key]
	if l.only != nil && !l.only.has(val) {
		l = set.reindex(key)
	}
	return l.get(val)
}

// allRefs returns the bound pods carrying key, by set position (the key is indexed).
func (set *ExistingSet) allRefs(key string) []boundRef {
	l := set.labels[key]
	if l.only != nil {
		l = set.reindex(key)
	}
	return l.all()
}

// reindex indexes a key again, with every value.
func (set *ExistingSet) reindex(key string) *labelRefs {
	delete(set.labels, key)
	set.indexKeys([]string{key})
	return set.labels[key]
}

// valueSet is a few label values, looked up by length first: most labels a million bound pods
// carry are not among them.
type valueSet struct {
	list []string
	m    map[string]bool // when the list is long
}

func newValueSet(vals []string) *valueSet {
	vs := &valueSet{list: vals}
	if len(vals) > 8 {
		vs.m = make(map[string]bool, len(vals))
		for _, v := range vals {
			vs.m[v] = true
		}
	}
	return vs
}

// has reports whether v is in the set; a nil set holds every value.
func (vs *valueSet) has(v string) bool {
	if vs == nil {
		return true
	}
	if vs.m != nil {
		return vs.m[v]
	}
	for _, x := range vs.list {
		if x == v {
			return true
		}
	}
	return false
}

// setView is one solve's use of a set: which of its nodes the solve shows, as which targets.
type setView struct {
	set    *ExistingSet
	target []int32 // set position -> target index, -1 for a node the solve leaves out
	resMap []int   // set resource position -> the solver's, -1 for a name it does not know
	shape  []int32 // set shape -> index in solver.shapes, -1 until asked
}

func newSetView(s *solver, set *ExistingSet) *setView {
	v := &setView{set: set, target: make([]int32, len(set.nodes)), resMap: make([]int, len(set.ri.names))}
	for i := range v.target {
		v.target[i] = -1
	}
	for i, n := range set.ri.names {
		v.resMap[i] = -1
		if p, ok := s.ri.pos[n]; ok {
			v.resMap[i] = p
		}
	}
	return v
}

// refs translates set references to target references, dropping the nodes left out.
func (v *setView) refs(dst []boundRef, refs []boundRef) []boundRef {
	for _, r := range refs {
		if t := v.target[r.t]; t >= 0 {
			dst = append(dst, boundRef{t, r.i})
		}
	}
	return dst
}

// solverShape is a shape of existing node as one solve knows it: the requirement-set ID of its
// labels (hostname aside) and its taints in force.
type solverShape struct {
	reqID  int32
	taints []corev1.Taint
}

// shapeIndex returns the index in s.shapes of the existing target's shape.
func (s *solver) shapeIndex(t *target) int32 {
	v := t.view
	sh := v.set.shapeOf(t.prep)
	for len(v.shape) <= int(sh) {
		v.shape = append(v.shape, -1)
	}
	if v.shape[sh] < 0 {
		v.shape[sh] = int32(len(s.shapes))
		s.shapes = append(s.shapes, solverShape{reqID: s.intern(v.set.shapeReqs[sh]), taints: v.set.shapeTaints[sh]})
	}
	return v.shape[sh]
}

// existingAdmits reports whether an existing target's taints and labels allow the attempt: the
// pod tolerates every taint in force and its requirements are compatible with the labels. The
// labels are checked per shape (hostname aside, which is checked on its own), so that a node's
// own labels are never compiled for this.
func (s *solver) existingAdmits(a *attempt, t *target) bool {
	ok := (len(t.taints) == 0 || toleratesAll(a.p.pod.Spec.Tolerations, t.taints, !a.p.preferNoScheduleTolerated)) &&
		(a.hostReq == nil || a.hostReq.Has(t.hostname)) &&
		s.shapeAdmits(s.shapes[s.shapeIndex(t)].reqID, a.reqID)
	if !ok {
		s.admitMisses++
		if s.room != nil && s.room.shapes == nil && s.admitMisses > shapeIndexAfter(s.numExisting) {
			s.enableShapes()
		}
	}
	return ok
}

// shapeIndexAfter is how many refusals for labels or taints enable the shape bits of the room
// index (a variable for tests).
var shapeIndexAfter = func(numExisting int) int { return max(256, numExisting/16) }

// existingFilterPasses applies a spread constraint's node inclusion policies to an existing
// target: its labels per shape (hostname aside, checked on its own), its taints if honoured.
func (s *solver) existingFilterPasses(f *nodeFilter, t *target) bool {
	if f.reqs.Len() > 0 {
		if h, ok := f.reqs.Get(LabelHostname); ok && !h.Has(t.hostname) {
			return false
		}
		id, ok := s.filterIDs[f]
		if !ok {
			id = s.intern(f.reqs)
			if s.filterIDs == nil {
				s.filterIDs = map[*nodeFilter]int32{}
			}
			s.filterIDs[f] = id
		}
		if !s.shapeAdmits(s.shapes[s.shapeIndex(t)].reqID, id) {
			return false
		}
	}
	return !f.honorTaints || toleratesAll(f.tolerations, t.taints, false)
}

// shapeAdmits reports whether a requirement set (hostname aside) is compatible with a shape's
// labels, cached per pair of requirement sets.
func (s *solver) shapeAdmits(shapeReqID, reqID int32) bool {
	k := [2]int32{shapeReqID, reqID}
	ok, hit := s.shapeCompat[k]
	if !hit {
		ok = s.reqByID[shapeReqID].Compatible(s.reqByID[reqID].Without(LabelHostname), nil) == nil
		if s.shapeCompat == nil {
			s.shapeCompat = map[[2]int32]bool{}
		}
		s.shapeCompat[k] = ok
	}
	return ok
}

// enableShapes adds the shape bits to the room index (see roomIndex). Every existing target's
// shape is needed: a prepared set keeps them across solves.
func (s *solver) enableShapes() {
	ix := s.room
	ix.shapes = make([]uint64, 2*ix.size)
	for i, t := range s.targets[:s.numExisting] {
		ix.shapes[ix.size+i] = 1 << (uint(s.shapeIndex(t)) % 64)
	}
	for i := ix.size - 1; i >= 1; i-- {
		ix.shapes[i] = ix.shapes[2*i] | ix.shapes[2*i+1]
	}
}

// shapeMaskKey is what an attempt's shape bits depend on: its requirements, its pod's
// tolerations (by identity: pods are not changed during a solve, and equal tolerations are
// mostly shared by the informer transform) and preference mode. It is not the attempt itself:
// pods without topology groups are compiled one after another into the same scratch attempt.
type shapeMaskKey struct {
	reqID int32
	pns   bool
	tols  *corev1.Toleration
	ntols int
}

// shapeMaskEntry is the shape bits, valid while the number of shapes is the one they were
// computed for.
type shapeMaskEntry struct {
	shapes int
	mask   uint64
}

// shapeMask returns the bits of the shapes that may admit the attempt (labels, hostname aside,
// and taints).
func (s *solver) shapeMask(a *attempt) uint64 {
	tols := a.p.pod.Spec.Tolerations
	k := shapeMaskKey{reqID: a.reqID, pns: a.p.preferNoScheduleTolerated, ntols: len(tols)}
	if len(tols) > 0 {
		k.tols = &tols[0]
	}
	e, ok := s.shapeMasks[k]
	if ok && e.shapes == len(s.shapes) {
		return e.mask
	}
	e = shapeMaskEntry{shapes: len(s.shapes)}
	for j, sh := range s.shapes {
		if e.mask&(1<<(uint(j)%64)) != 0 {
			continue
		}
		if (len(sh.taints) == 0 || toleratesAll(tols, sh.taints, !a.p.preferNoScheduleTolerated)) && s.shapeAdmits(sh.reqID, a.reqID) {
			e.mask |= 1 << (uint(j) % 64)
		}
	}
	if s.shapeMasks == nil {
		s.shapeMasks = map[shapeMaskKey]shapeMaskEntry{}
	}
	s.shapeMasks[k] = e
	return e.mask
}
