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
// come from slabs, bound pods are the input's slice, and a node's labels become requirements
// (and get a requirement-set ID) only when a pod is tried on it (nodeReqs). Topology domains
// of an existing node are read from its labels directly (existingDomain).

// addExistingNodes adds the input's existing nodes as the first targets, ready nodes first,
// then by name, and creates the groups of their pods' required anti-affinity.
func (s *solver) addExistingNodes(in []*ExistingNode) {
	nodes := append([]*ExistingNode(nil), in...)
	cmp := func(a, b *ExistingNode) int {
		ra, rb := a.Initialized && !a.InFlight, b.Initialized && !b.InFlight
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	}
	// Callers usually list nodes by name already: checking is linear, sorting is not.
	if !slices.IsSortedFunc(nodes, cmp) {
		slices.SortStableFunc(nodes, cmp)
	}
	s.bound = &boundIndex{byLabel: map[string]*labelRefs{}}
	// The label keys the pending pods' selectors name are indexed while the bound pods are
	// read for their requests, rather than in a second pass over a million pods.
	if len(nodes) > 0 { // without nodes there are no bound pods to index
		s.bound.wanted = selectorKeys(s.in.Pods)
	}
	if s.bound.wanted == nil {
		s.bound.wanted = []string{}
	}
	for _, k := range s.bound.wanted {
		l := &labelRefs{}
		s.bound.byLabel[k] = l
		s.bound.eager = append(s.bound.eager, l)
	}
	slab := &existingSlab{width: len(s.ri.names)}
	for _, n := range nodes {
		s.addExisting(n, slab)
	}
	s.numExisting = len(s.targets)
	// Bound pods' required anti-affinity repels new pods (the inverse direction), so their
	// groups must exist before the first new pod is considered.
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

func (s *solver) addExisting(n *ExistingNode, slab *existingSlab) {
	t := slab.target()
	t.idx, t.existing = len(s.targets), n
	t.hostname = existingHostname(n)
	t.reqID = -1 // labels not compiled yet: see nodeReqs
	t.taints = existingTaints(n)
	for _, taint := range t.taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			s.anyPreferNoSchedule = true
		}
	}
	t.avail = slab.vec()
	for name, q := range n.Allocatable {
		if i, ok := s.ri.pos[name]; ok {
			t.avail[i] = quantityValue(name, q)
		}
	}
	if _, ok := n.Allocatable[corev1.ResourcePods]; !ok {
		t.avail[resPods] = math.MaxInt64 / 4
	}
	t.used = slab.vec()
	// The input's pod slice serves as the bound pods unless some have finished (capped, so
	// that an append could never write into it).
	t.bound = n.Pods[:len(n.Pods):len(n.Pods)]
	for i, p := range n.Pods {
		if !occupies(p) {
			t.bound = nil
			for _, p := range n.Pods[:i] {
				t.bound = append(t.bound, p)
			}
			for _, p := range n.Pods[i:] {
				if occupies(p) {
					t.bound = append(t.bound, p)
				}
			}
			break
		}
	}
	for i, p := range t.bound {
		s.addRequests(t.used, p)
		t.used[resPods]++
		t.ports = append(t.ports, podHostPorts(p)...)
		ref := boundRef{int32(t.idx), int32(i)}
		if len(repelling(p)) > 0 {
			s.bound.repelers = append(s.bound.repelers, ref)
		}
		if len(p.Labels) > 0 {
			for ki, k := range s.bound.wanted {
				if v, ok := p.Labels[k]; ok {
					s.bound.eager[ki].add(v, ref)
				}
			}
		}
	}
	s.bound.all += len(t.bound)
	if !n.Initialized || n.InFlight {
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
		s.bound = &boundIndex{byLabel: map[string]*labelRefs{}}
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
	if len(s.in.DaemonSetPods) == 0 {
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
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" {
				want.sub(s.ri.vec(podRequests(p)))
				want[resPods]--
				break
			}
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
	for _, ds := range s.in.DaemonSetPods {
		if ToleratesTaints(ds.Spec.Tolerations, taints, false) == nil && daemonCompatible(ds, reqs, nil) {
			out = append(out, ds)
		}
	}
	return out
}

// boundIndex finds, among the pods bound to existing nodes, those a new topology group may
// count, without reading every pod: at 100,000 nodes of ten pods each, a group created by one
// pending pod would otherwise match its selector against a million pods. The keys the pending
// pods' selectors name are indexed while the bound pods are read for their requests (no
// second pass over a million pods); any other key when a group's selector first asks for it,
// in one pass reading only that key. Bound pods do not change during a solve (pods placed by
// the solve are scanned separately).
type boundIndex struct {
	byLabel  map[string]*labelRefs // indexed label key -> pods carrying it, by value
	repelers []boundRef            // pods with required anti-affinity (possible owners)
	all      int                   // number of bound pods
	wanted   []string              // keys the pending pods' selectors name, once listed
	eager    []*labelRefs          // their lists, filled as nodes are added
	domains  map[string][]string   // key -> domains of the existing nodes (existingDomains)
}

// boundRef is a bound pod by target and position in t.bound.
type boundRef struct{ t, i int32 }

// labelRefs lists the bound pods carrying one label key, with their values, in target then pod
// order. Indexing must cost little per pod (a million at 100,000 nodes) while most keys are
// asked about for one value or two: the first question about a value scans the list, and the
// per-value lists are built (one map lookup per pod) on the second.
type labelRefs struct {
	flat    [][]valueRef // in chunks: growing one slice of a million entries copies them over and over
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

// indexKeys indexes the given label keys (those not indexed yet) in one pass.
func (s *solver) indexKeys(keys []string) {
	ix := s.bound
	var todo []string
	var lists []*labelRefs
	for _, k := range keys {
		if _, ok := ix.byLabel[k]; ok || slices.Contains(todo, k) {
			continue
		}
		l := &labelRefs{}
		ix.byLabel[k] = l
		todo = append(todo, k)
		lists = append(lists, l)
	}
	if len(todo) == 0 {
		return
	}
	for ti, t := range s.targets[:s.numExisting] {
		for pi, p := range t.bound {
			if len(p.Labels) == 0 {
				continue
			}
			for ki, k := range todo {
				if v, ok := p.Labels[k]; ok {
					lists[ki].add(v, boundRef{int32(ti), int32(pi)})
				}
			}
		}
	}
}

// selectorKeys lists the label keys the pending pods' topology spread and pod (anti-)affinity
// selectors name: the keys their groups will ask the index for.
func selectorKeys(pods []*corev1.Pod) []string {
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	addSel := func(ls *metav1.LabelSelector, keys ...[]string) {
		if ls != nil {
			for k := range ls.MatchLabels {
				add(k)
			}
			for _, e := range ls.MatchExpressions {
				add(e.Key)
			}
		}
		for _, ks := range keys {
			for _, k := range ks {
				add(k)
			}
		}
	}
	addTerms := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		for i := range req {
			addSel(req[i].LabelSelector, req[i].MatchLabelKeys)
		}
		for i := range pref {
			addSel(pref[i].PodAffinityTerm.LabelSelector, pref[i].PodAffinityTerm.MatchLabelKeys)
		}
	}
	for _, p := range pods {
		for i := range p.Spec.TopologySpreadConstraints {
			tsc := &p.Spec.TopologySpreadConstraints[i]
			addSel(tsc.LabelSelector, tsc.MatchLabelKeys)
		}
		if a := p.Spec.Affinity; a != nil {
			if a.PodAffinity != nil {
				addTerms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			}
			if a.PodAntiAffinity != nil {
				addTerms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			}
		}
	}
	sort.Strings(out)
	return out
}

// candidates returns the bound pods the group can concern, in target then pod order: those
// its selector's most selective equality (or existence) requirement lets through, plus, for
// anti-affinity, every pod that repels. ok=false: the selector has no such requirement (an
// empty selector, only NotIn/DoesNotExist...), and every bound pod must be read.
func (s *solver) boundCandidates(g *topoGroup) ([]boundRef, bool) {
	if s.bound == nil { // a solver without existing nodes added (Placement)
		s.bound = &boundIndex{byLabel: map[string]*labelRefs{}}
	}
	ix := s.bound
	reqs, selectable := g.selector.Requirements()
	if !selectable {
		// labels.Nothing(): matches no pod; only owners count.
		return sortedRefs(append([]boundRef(nil), ix.repelers...)), true
	}
	var keys []string
	for _, r := range reqs {
		switch r.Operator() {
		case "=", "==", "in", "exists":
			if _, ok := ix.byLabel[r.Key()]; !ok {
				keys = append(keys, r.Key())
			}
		}
	}
	if len(keys) > 0 {
		s.indexKeys(keys)
	}
	var best []boundRef
	found := false
	for _, r := range reqs {
		var refs []boundRef
		vals := ix.byLabel[r.Key()]
		switch r.Operator() {
		case "=", "==", "in":
			for v := range r.Values() {
				refs = append(refs, vals.get(v)...)
			}
		case "exists":
			refs = vals.all()
		default:
			continue
		}
		if !found || len(refs) < len(best) {
			best, found = refs, true
		}
	}
	if !found {
		return nil, false
	}
	if g.kind == kindAnti {
		best = append(best, ix.repelers...)
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
	hm := false
	for _, x := range r.reqs {
		if x.MinValues != nil {
			hm = true
		}
	}
	s.hasMin = append(s.hasMin, hm)
	return id
}

// addRequests adds a pod's requests to v in place (no vector per bound pod). cpu and memory,
// which nearly every pod requests, are looked up directly: ranging over the request map of each
// of a million bound pods costs more than the rest of a node's set-up.
func (s *solver) addRequests(v resVec, p *corev1.Pod) {
	req := podRequests(p)
	seen := 0
	if q, ok := req[corev1.ResourceCPU]; ok {
		v[resCPU] += q.MilliValue()
		seen++
	}
	if q, ok := req[corev1.ResourceMemory]; ok {
		v[resMemory] += q.Value()
		seen++
	}
	if len(req) == seen {
		return
	}
	for n, q := range req {
		if n == corev1.ResourceCPU || n == corev1.ResourceMemory {
			continue
		}
		if i, ok := s.ri.pos[n]; ok {
			v[i] += quantityValue(n, q)
		}
	}
}

// roomIndex is a segment tree of the existing targets' free cpu, memory and pod slots
// (allocatable minus used), so that a pod skips, in one descent, every existing node without
// room for it. Without it, each pod of a solve reads the existing nodes in order until one
// takes it: at 100,000 nodes, once the first nodes fill up (or when none has room), every pod
// reads tens of thousands of full nodes, and a solve of 100,000 moving pods (a disruption
// simulation) becomes quadratic. Built on the first placement, after every existing target is
// added; commit keeps it current.
type roomIndex struct {
	size int
	tree [3][]int64 // per dimension (resCPU, resMemory, resPods): max free over the subtree
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

// nextExisting returns the first existing target at or after from with room for req in cpu,
// memory and pod slots (s.numExisting when there is none). tryTarget still checks everything.
func (s *solver) nextExisting(req resVec, from int) int {
	if from >= s.numExisting {
		return s.numExisting
	}
	ix := s.roomIndex()
	var need [3]int64
	for d := range need {
		need[d] = req[roomDims[d]]
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
		if hi-lo == 1 {
			return lo
		}
		mid := (lo + hi) / 2
		if r := walk(2*i, lo, mid); r >= 0 {
			return r
		}
		return walk(2*i+1, mid, hi)
	}
	if r := walk(1, 0, ix.size); r >= 0 {
		return r
	}
	return s.numExisting
}
