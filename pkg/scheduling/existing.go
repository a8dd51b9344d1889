package scheduling

import (
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Existing nodes: capacity that is already there or already launching.
//
// At 100,000 nodes of ten pods each, a provisioning solve of a few hundred pending pods tries
// a handful of nodes, yet every node has to be known (its free capacity for the room index,
// its bound pods for topology counts). The set-up per node is therefore kept to what the
// first-fit scan and the counts need, without allocating: targets and their resource vectors
// come from slabs, bound pods are the input's slice, and a pod is checked against a node's
// shape (its labels but hostname, and its taints: existingset.go), compiled once per shape; a
// node's own labels become requirements only where a DaemonSet must be matched (nodeReqs).
// Topology domains of an existing node are read from its labels directly (existingDomain). What
// is read of a node and its pods lives in an ExistingSet: the solve's own, or one prepared for
// several solves (Input.Prepared).

// addExistingNodes adds the input's existing nodes as the first targets, ready nodes first,
// then by name, and creates the groups of their pods' required anti-affinity. Nodes of the
// input's prepared set (existingset.go) are taken from it; the others are read here, indexing
// on the way the label keys the pending pods' selectors name (rather than in a second pass over
// a million bound pods).
func (s *solver) addExistingNodes(in []*ExistingNode) {
	nodes := sortedExisting(in)
	s.bound = &boundIndex{}
	var shared *setView
	if s.in.Prepared != nil && len(s.in.Prepared.nodes) > 0 {
		shared = newSetView(s, s.in.Prepared)
	}
	// Which view and position each node comes from: the shared set, or a set of the rest.
	from := make([]int32, len(nodes)) // >= 0: position in the shared set; -1: in the rest
	var rest []*ExistingNode
	for i, n := range nodes {
		from[i] = -1
		if shared != nil {
			if pos, ok := shared.set.pos[n]; ok && shared.target[pos] < 0 {
				from[i] = pos
				shared.target[pos] = int32(i) // claimed; the index is set again below
				continue
			}
		}
		rest = append(rest, n)
	}
	var own *setView
	if len(rest) > 0 {
		own = &setView{set: newExistingSet(s, len(rest), selectorKeys(s.in.Pods)), target: make([]int32, len(rest))}
	}
	if shared != nil {
		s.views = append(s.views, shared)
	}
	if own != nil {
		s.views = append(s.views, own)
	}
	slab := &existingSlab{width: len(s.ri.names)}
	for i, n := range nodes {
		if pos := from[i]; pos >= 0 {
			s.addExisting(shared, pos, slab)
			continue
		}
		s.addExisting(own, own.set.add(n), slab)
	}
	s.numExisting = len(s.targets)
	// Bound pods' required anti-affinity repels new pods (the inverse direction), so their
	// groups must exist before the first new pod is considered.
	var repelers []boundRef
	for _, v := range s.views {
		repelers = v.refs(repelers, v.set.repelers)
	}
	s.bound.repelers = sortedRefs(repelers)
	for _, ref := range s.bound.repelers {
		p := s.targets[ref.t].bound[ref.i]
		terms := repelling(p)
		for i := range terms {
			_, _ = s.affinityGroup(p, &terms[i], kindAnti)
		}
	}
}

// existingSlab hands out targets and resource vectors in chunks: two allocations per
// thousand nodes instead of several per node.
type existingSlab struct {
	width   int
	targets []target
	vecs    []int64
}

const slabChunk = 1024

func (sl *existingSlab) target() *target {
	if len(sl.targets) == 0 {
		sl.targets = make([]target, slabChunk)
	}
	t := &sl.targets[0]
	sl.targets = sl.targets[1:]
	return t
}

func (sl *existingSlab) vec() resVec {
	if len(sl.vecs) < sl.width {
		sl.vecs = make([]int64, sl.width*slabChunk)
	}
	v := sl.vecs[:sl.width:sl.width]
	sl.vecs = sl.vecs[sl.width:]
	return v
}

// addExisting adds the node at position pos of the view's set as the next target: its usage
// and host ports are copied (the solve adds to them), the rest is shared with the set.
func (s *solver) addExisting(v *setView, pos int32, slab *existingSlab) {
	pn := v.set.nodes[pos]
	t := slab.target()
	t.idx, t.existing = len(s.targets), pn.n
	v.target[pos] = int32(t.idx)
	t.view, t.prep = v, pn
	t.hostname = pn.hostname
	t.reqID = -1 // labels not compiled yet: see nodeReqs
	t.taints = pn.taints
	for _, taint := range t.taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			s.anyPreferNoSchedule = true
		}
	}
	if v.set.own {
		// This solve's own: the vectors are in its positions already, and its to change.
		t.avail, t.used = pn.avail, pn.used
	} else {
		t.avail, t.used = slab.vec(), slab.vec()
		for i, j := range v.resMap {
			if j >= 0 {
				t.avail[j] = pn.avail[i]
				t.used[j] = pn.used[i]
			}
		}
		for name, q := range pn.extra {
			if j, ok := s.ri.pos[name]; ok {
				t.used[j] += q
			}
		}
	}
	t.bound = pn.bound
	t.ports = pn.ports
	s.bound.all += len(t.bound)
	if !pn.n.Initialized || pn.n.InFlight {
		s.pendingDaemonSets(t)
	}
	s.targets = append(s.targets, t)
}

// nodeReqs returns an existing target's labels as requirements (hostname included),
// compiling them and registering their requirement-set ID on first use.
func (s *solver) nodeReqs(t *target) Requirements {
	if t.reqID < 0 {
		t.reqs = existingReqs(t.existing, t.hostname)
		// A node's labels include its hostname, so its requirement set is its own: it gets an
		// ID without the interning key (the string would cost more than the node's other set-up).
		t.reqID = s.internUnique(t.reqs)
	}
	return t.reqs
}

// existingDomain is an existing target's domain for a key other than hostname: its label.
func existingDomain(t *target, key string) (string, bool) {
	v, ok := t.existing.Labels[key]
	return v, ok
}

// existingDomains adds to set the domains of g's key that existing nodes passing g's node
// filter are in. Without a filter the answer depends on the key alone, and is kept per key:
// each zonal group of a solve would otherwise read every node's labels.
func (s *solver) existingDomains(g *topoGroup, set map[string]bool) {
	if g.filter != nil {
		for _, t := range s.targets[:s.numExisting] {
			if !s.filterPasses(g, t) {
				continue
			}
			if d, ok := s.domainOf(t, g.key); ok {
				set[d] = true
			}
		}
		return
	}
	if s.bound == nil { // a solver without existing nodes added (Placement)
		s.bound = &boundIndex{}
	}
	ix := s.bound
	if ix.domains == nil {
		ix.domains = map[string][]string{}
	}
	ds, ok := ix.domains[g.key]
	if !ok {
		seen := map[string]bool{}
		for _, t := range s.targets[:s.numExisting] {
			if d, ok := s.domainOf(t, g.key); ok && !seen[d] {
				seen[d] = true
				ds = append(ds, d)
			}
		}
		ix.domains[g.key] = ds
	}
	for _, d := range ds {
		set[d] = true
	}
}

// existingView is what the solver reads of an existing node besides its capacity and pods: its
// hostname, its labels as requirements (hostname included) and the taints in force. Boot-time
// taints are ignored while the node starts; startup taints once it has finished.
func existingView(n *ExistingNode) (hostname string, reqs Requirements, taints []corev1.Taint) {
	hostname = existingHostname(n)
	return hostname, existingReqs(n, hostname), existingTaints(n)
}

func existingHostname(n *ExistingNode) string {
	if h, ok := n.Labels[LabelHostname]; ok {
		return h
	}
	return n.Name
}

func existingReqs(n *ExistingNode, hostname string) Requirements {
	lbls := n.Labels
	if _, ok := lbls[LabelHostname]; !ok {
		lbls = make(map[string]string, len(n.Labels)+1)
		for k, v := range n.Labels {
			lbls[k] = v
		}
		lbls[LabelHostname] = hostname
	}
	return FromLabels(lbls)
}

func existingTaints(n *ExistingNode) (taints []corev1.Taint) {
	for _, taint := range n.Taints {
		if !n.Initialized && IsEphemeralTaint(taint) {
			continue
		}
		taints = append(taints, taint)
	}
	if n.Initialized {
		taints = append(taints, n.StartupTaints...)
	}
	return taints
}

// occupies reports whether a pod bound to a node takes room there: finished pods do not.
func occupies(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// pendingDaemonSets reserves, on a node that is still starting, the DaemonSet pods that will
// land on it but are not bound yet: the DaemonSets compatible with the node, minus the
// DaemonSet-owned pods already bound (never below zero).
func (s *solver) pendingDaemonSets(t *target) {
	if len(s.daemons) == 0 {
		return
	}
	want := make(resVec, len(s.ri.names))
	var ports []hostPort
	for _, ds := range s.pendingDaemons(s.nodeReqs(t), t.taints) {
		want.add(s.ri.vec(podRequests(ds)))
		want[resPods]++
		ports = append(ports, podHostPorts(ds)...)
	}
	for _, p := range t.bound {
		if OwnedByDaemonSet(p) {
			want.sub(s.ri.vec(podRequests(p)))
			want[resPods]--
		}
	}
	for i, v := range want {
		if v > 0 {
			t.used[i] += v
		}
	}
	if len(t.bound) == 0 {
		t.ports = append(t.ports, ports...)
	}
}

// pendingDaemons lists the DaemonSets that will run a pod on a starting node with these labels
// and taints.
func (s *solver) pendingDaemons(reqs Requirements, taints []corev1.Taint) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range s.daemons {
		if toleratesAll(ds.Spec.Tolerations, taints, false) && daemonCompatible(ds, reqs, nil) {
			out = append(out, ds)
		}
	}
	return out
}

// boundIndex finds, among the pods bound to existing nodes, those a new topology group may
// count, without reading every pod: at 100,000 nodes of ten pods each, a group created by one
// pending pod would otherwise match its selector against a million pods. The label index itself
// lives in the existing-node sets (ExistingSet.labels), which a prepared set shares across
// solves; this is the solve's side. Bound pods do not change during a solve (pods placed by the
// solve are scanned separately).
type boundIndex struct {
	repelers []boundRef          // pods with required anti-affinity (possible owners), by target
	all      int                 // number of bound pods
	domains  map[string][]string // key -> domains of the existing nodes (existingDomains)
}

// boundRef is a bound pod by target and position in t.bound.
type boundRef struct{ t, i int32 }

// labelRefs lists the bound pods carrying one label key, with their values, in target then pod
// order. Indexing must cost little per pod (a million at 100,000 nodes) while most keys are
// asked about for one value or two: the first question about a value scans the list, and the
// per-value lists are built (one map lookup per pod) on the second.
type labelRefs struct {
	flat [][]valueRef // in chunks: growing one slice of a million entries copies them over and over
	// only, when set, says the list holds the pods carrying these values alone (a fresh solve
	// indexes what its pending pods' selectors ask for); another value re-reads the key.
	only    *valueSet
	asked   int
	pos     map[string]int32
	byValue [][]boundRef
}

type valueRef struct {
	v   string
	ref boundRef
}

const refChunk = 4096

func (l *labelRefs) add(v string, ref boundRef) {
	n := len(l.flat)
	if n == 0 || len(l.flat[n-1]) == refChunk {
		l.flat = append(l.flat, make([]valueRef, 0, refChunk))
		n++
	}
	l.flat[n-1] = append(l.flat[n-1], valueRef{v, ref})
}

// get returns the pods carrying value v, in order; the slice must not be modified.
func (l *labelRefs) get(v string) []boundRef {
	if l.pos == nil {
		if l.asked++; l.asked == 1 {
			var out []boundRef
			for _, c := range l.flat {
				for i := range c {
					if c[i].v == v {
						out = append(out, c[i].ref)
					}
				}
			}
			return out
		}
		l.pos = map[string]int32{}
		for _, c := range l.flat {
			for i := range c {
				x := &c[i]
				j, ok := l.pos[x.v]
				if !ok {
					j = int32(len(l.byValue))
					l.pos[x.v] = j
					l.byValue = append(l.byValue, nil)
				}
				l.byValue[j] = append(l.byValue[j], x.ref)
			}
		}
	}
	if i, ok := l.pos[v]; ok {
		return l.byValue[i]
	}
	return nil
}

// all returns every pod carrying the key, in order.
func (l *labelRefs) all() []boundRef {
	var out []boundRef
	for _, c := range l.flat {
		for i := range c {
			out = append(out, c[i].ref)
		}
	}
	return out
}

// wantedKey is a label key the pending pods' selectors name, with the values they ask for
// (all: some selector asks for any value, or for values not known up front).
type wantedKey struct {
	key    string
	values []string
	all    bool
}

// selectorKeys lists the label keys the pending pods' topology spread and pod (anti-)affinity
// selectors name, sorted: the keys their groups will ask the index for, with the values.
func selectorKeys(pods []*corev1.Pod) []wantedKey {
	byKey := map[string]int{}
	var out []wantedKey
	want := func(k string) *wantedKey {
		i, ok := byKey[k]
		if !ok {
			i = len(out)
			byKey[k] = i
			out = append(out, wantedKey{key: k})
		}
		return &out[i]
	}
	addValue := func(k, v string) {
		w := want(k)
		if !w.all && !slices.Contains(w.values, v) {
			w.values = append(w.values, v)
		}
	}
	addSel := func(p *corev1.Pod, ls *metav1.LabelSelector, keys []string) {
		if ls != nil {
			for k, v := range ls.MatchLabels {
				addValue(k, v)
			}
			for _, e := range ls.MatchExpressions {
				if e.Operator == metav1.LabelSelectorOpIn {
					for _, v := range e.Values {
						addValue(e.Key, v)
					}
					continue
				}
				want(e.Key).all = true
			}
		}
		// matchLabelKeys select the pod's own value of each key.
		for _, k := range keys {
			if v, ok := p.Labels[k]; ok {
				addValue(k, v)
			} else {
				want(k).all = true
			}
		}
	}
	addTerms := func(p *corev1.Pod, req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		for i := range req {
			addSel(p, req[i].LabelSelector, req[i].MatchLabelKeys)
		}
		for i := range pref {
			addSel(p, pref[i].PodAffinityTerm.LabelSelector, pref[i].PodAffinityTerm.MatchLabelKeys)
		}
	}
	for _, p := range pods {
		for i := range p.Spec.TopologySpreadConstraints {
			tsc := &p.Spec.TopologySpreadConstraints[i]
			addSel(p, tsc.LabelSelector, tsc.MatchLabelKeys)
		}
		if a := p.Spec.Affinity; a != nil {
			if a.PodAffinity != nil {
				addTerms(p, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			}
			if a.PodAntiAffinity != nil {
				addTerms(p, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			}
		}
	}
	for i := range out {
		if out[i].all {
			out[i].values = nil
		}
	}
	slices.SortFunc(out, func(a, b wantedKey) int { return strings.Compare(a.key, b.key) })
	return out
}

// candidates returns the bound pods the group can concern, in target then pod order: those
// its selector's most selective equality (or existence) requirement lets through, plus, for
// anti-affinity, every pod that repels. ok=false: the selector has no such requirement (an
// empty selector, only NotIn/DoesNotExist...), and every bound pod must be read.
func (s *solver) boundCandidates(g *topoGroup) ([]boundRef, bool) {
	if s.bound == nil { // a solver without existing nodes added (Placement)
		s.bound = &boundIndex{}
	}
	if g.eqOnly {
		return s.boundCandidatesEq(g)
	}
	reqs, selectable := g.sel().Requirements()
	if !selectable {
		// labels.Nothing(): matches no pod; only owners count.
		return append([]boundRef(nil), s.bound.repelers...), true
	}
	var keys []string
	for _, r := range reqs {
		switch r.Operator() {
		case "=", "==", "in", "exists":
			keys = append(keys, r.Key())
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	for _, v := range s.views {
		v.set.indexKeys(keys)
	}
	var best []boundRef
	found := false
	for _, r := range reqs {
		var refs []boundRef
		switch r.Operator() {
		case "=", "==", "in":
			for _, v := range s.views {
				for val := range r.Values() {
					refs = v.refs(refs, v.set.valueRefs(r.Key(), val))
				}
			}
		case "exists":
			for _, v := range s.views {
				refs = v.refs(refs, v.set.allRefs(r.Key()))
			}
		default:
			continue
		}
		if !found || len(refs) < len(best) {
			best, found = refs, true
		}
	}
	if g.kind == kindAnti {
		best = append(best, s.bound.repelers...)
	}
	return sortedRefs(best), true
}

// boundCandidatesEq is boundCandidates for a selector of key=value pairs only (g.eq), read
// without building the selector.
func (s *solver) boundCandidatesEq(g *topoGroup) ([]boundRef, bool) {
	if len(g.eq) == 0 {
		return nil, false
	}
	keys := s.eqKeys[:0]
	for _, kv := range g.eq {
		keys = append(keys, kv[0])
	}
	s.eqKeys = keys
	for _, v := range s.views {
		v.set.indexKeys(keys)
	}
	var best []boundRef
	for i, kv := range g.eq {
		var refs []boundRef
		for _, v := range s.views {
			refs = v.refs(refs, v.set.valueRefs(kv[0], kv[1]))
		}
		if i == 0 || len(refs) < len(best) {
			best = refs
		}
	}
	if g.kind == kindAnti {
		best = append(best, s.bound.repelers...)
	}
	return sortedRefs(best), true
}

// sortedRefs sorts and removes duplicates (a pod reached through two values of one In
// requirement, or both matching and repelling).
func sortedRefs(refs []boundRef) []boundRef {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].t != refs[j].t {
			return refs[i].t < refs[j].t
		}
		return refs[i].i < refs[j].i
	})
	out := refs[:0]
	for i, r := range refs {
		if i == 0 || r != refs[i-1] {
			out = append(out, r)
		}
	}
	return out
}

// countExisting counts a new group over every pod already on a target: bound pods through the
// index (only those the group can concern), pods placed by this solve directly. The order is
// the targets' (bound pods before placed ones), as a full scan would give.
func (s *solver) countExisting(g *topoGroup) {
	refs, ok := s.boundCandidates(g)
	next := 0
	for ti, t := range s.targets {
		if !ok || ti >= s.numExisting {
			for _, p := range t.allPods() {
				s.recordInGroup(g, p, t)
			}
			continue
		}
		for ; next < len(refs) && int(refs[next].t) == ti; next++ {
			s.recordInGroup(g, t.bound[refs[next].i], t)
		}
		for _, p := range t.pods {
			s.recordInGroup(g, p, t)
		}
	}
}

// internUnique registers a requirement set known to differ from every other (an existing node's,
// hostname included) and returns its ID.
func (s *solver) internUnique(r Requirements) int32 {
	id := int32(len(s.reqByID))
	s.reqByID = append(s.reqByID, r)
	s.reqKeys = append(s.reqKeys, uniqueKey)
	hm := false
	for _, x := range r.reqs {
		if x.MinValues != nil {
			hm = true
		}
	}
	s.hasMin = append(s.hasMin, hm)
	return id
}

// roomIndex is a segment tree of the existing targets' free cpu, memory and pod slots
// (allocatable minus used), so that a pod skips, in one descent, every existing node without
// room for it. Without it, each pod of a solve reads the existing nodes in order until one
// takes it: at 100,000 nodes, once the first nodes fill up (or when none has room), every pod
// reads tens of thousands of full nodes, and a solve of 100,000 moving pods (a disruption
// simulation) becomes quadratic. Built on the first placement, after every existing target is
// added; commit keeps it current.
//
// Room alone is not enough when many nodes have room but few admit the pod (a node selector or
// a toleration names a small pool among many): the pod would read every node with room before
// its own. Once existing nodes have refused pods for their labels or taints often (see
// existingAdmits), the index also keeps, per subtree, which node shapes lie below (a bit per
// shape, modulo 64), and a pod descends only where a shape admitting it lies.
type roomIndex struct {
	size   int
	tree   [3][]int64 // per dimension (resCPU, resMemory, resPods): max free over the subtree
	shapes []uint64   // shape bits below each subtree, nil until enabled (enableShapes)
	// noRoom remembers, per query (requests and shape bits), a range [lo, hi) of existing
	// targets that had no room for it. Room only shrinks once the index is built (commit adds
	// usage, nothing gives it back), so a range without room stays without room, and the next
	// pod with the same requests starts past it. Without it, the per-dimension maxima send
	// each such pod down the same subtrees where cpu fits on one node and memory on another:
	// the full consolidation pass at 100,000 nodes spent two thirds of its solves' CPU there.
	noRoom map[roomQuery][2]int
}

// roomQuery is what nextExisting's answer depends on besides the start index.
type roomQuery struct {
	need [3]int64
	want uint64
}

var roomDims = [3]int{resCPU, resMemory, resPods}

func (s *solver) roomIndex() *roomIndex {
	if s.room != nil {
		return s.room
	}
	n := s.numExisting
	ix := &roomIndex{size: 1}
	for ix.size < n {
		ix.size *= 2
	}
	for d := range ix.tree {
		ix.tree[d] = make([]int64, 2*ix.size)
		for i := range ix.tree[d] {
			ix.tree[d][i] = math.MinInt64
		}
		for i, t := range s.targets[:n] {
			ix.tree[d][ix.size+i] = t.avail[roomDims[d]] - t.used[roomDims[d]]
		}
		for i := ix.size - 1; i >= 1; i-- {
			ix.tree[d][i] = max(ix.tree[d][2*i], ix.tree[d][2*i+1])
		}
	}
	s.room = ix
	return ix
}

// roomChanged records an existing target's new usage.
func (s *solver) roomChanged(t *target) {
	if s.room == nil || t.existing == nil || t.idx >= s.numExisting {
		return
	}
	ix := s.room
	for d := range ix.tree {
		i := ix.size + t.idx
		ix.tree[d][i] = t.avail[roomDims[d]] - t.used[roomDims[d]]
		for i /= 2; i >= 1; i /= 2 {
			ix.tree[d][i] = max(ix.tree[d][2*i], ix.tree[d][2*i+1])
		}
	}
}

// nextExisting returns the first existing target at or after from with room for the attempt's
// requests in cpu, memory and pod slots, and (once shapes are indexed) of a shape that may admit
// it (s.numExisting when there is none). tryTarget still checks everything.
func (s *solver) nextExisting(a *attempt, from int) int {
	if from >= s.numExisting {
		return s.numExisting
	}
	ix := s.roomIndex()
	req := a.p.requests
	var need [3]int64
	for d := range need {
		need[d] = req[roomDims[d]]
	}
	want := ^uint64(0)
	if ix.shapes != nil {
		want = s.shapeMask(a)
	}
	q := roomQuery{need: need, want: want}
	known, seen := ix.noRoom[q]
	if seen && known[0] <= from && from < known[1] {
		from = known[1]
		if from >= s.numExisting {
			return s.numExisting
		}
	}
	var walk func(i, lo, hi int) int
	walk = func(i, lo, hi int) int {
		if hi <= from || lo >= s.numExisting {
			return -1
		}
		for d := range need {
			if ix.tree[d][i] < need[d] {
				return -1
			}
		}
		if ix.shapes != nil && ix.shapes[i]&want == 0 {
			return -1
		}
		if hi-lo == 1 {
			return lo
		}
		mid := (lo + hi) / 2
		if r := walk(2*i, lo, mid); r >= 0 {
			return r
		}
		return walk(2*i+1, mid, hi)
	}
	r := walk(1, 0, ix.size)
	if r < 0 {
		r = s.numExisting
	}
	// [from, r) has no room. Keep the widest range known: a new one, one that reaches back
	// before the known range (and so covers it: no node there has room), or the known range
	// continued. A range starting past the known one is left out: most queries start early.
	switch {
	case !seen || from < known[0]:
		ix.rememberNoRoom(q, from, r)
	case from <= known[1] && r > known[1]:
		ix.rememberNoRoom(q, known[0], r)
	}
	return r
}

func (ix *roomIndex) rememberNoRoom(q roomQuery, lo, hi int) {
	if ix.noRoom == nil {
		ix.noRoom = map[roomQuery][2]int{}
	}
	ix.noRoom[q] = [2]int{lo, hi}
}
