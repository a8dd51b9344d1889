package scheduling

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Existing nodes: capacity that is already there or already launching.

func (s *solver) addExisting(n *ExistingNode) {
	t := &target{idx: len(s.targets), existing: n}
	t.hostname, t.reqs, t.taints = existingView(n)
	// A node's labels include its hostname, so its requirement set is its own: it gets an ID
	// without the interning key (the string would cost more than the node's other set-up).
	t.reqID = s.internUnique(t.reqs)
	for _, taint := range t.taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			s.anyPreferNoSchedule = true
		}
	}
	t.avail = s.ri.vec(n.Allocatable)
	if _, ok := n.Allocatable[corev1.ResourcePods]; !ok {
		t.avail[resPods] = math.MaxInt64 / 4
	}
	t.used = make(resVec, len(s.ri.names))
	for _, p := range n.Pods {
		if !occupies(p) {
			continue
		}
		s.addRequests(t.used, p)
		t.used[resPods]++
		t.ports = append(t.ports, podHostPorts(p)...)
		t.bound = append(t.bound, p)
	}
	if !n.Initialized || n.InFlight {
		s.pendingDaemonSets(t)
	}
	s.targets = append(s.targets, t)
}

// existingView is what the solver reads of an existing node besides its capacity and pods: its
// hostname, its labels as requirements (hostname included) and the taints in force. Boot-time
// taints are ignored while the node starts; startup taints once it has finished.
func existingView(n *ExistingNode) (hostname string, reqs Requirements, taints []corev1.Taint) {
	hostname = n.Name
	if h, ok := n.Labels[LabelHostname]; ok {
		hostname = h
	}
	lbls := n.Labels
	if _, ok := lbls[LabelHostname]; !ok {
		lbls = make(map[string]string, len(n.Labels)+1)
		for k, v := range n.Labels {
			lbls[k] = v
		}
		lbls[LabelHostname] = hostname
	}
	for _, taint := range n.Taints {
		if !n.Initialized && IsEphemeralTaint(taint) {
			continue
		}
		taints = append(taints, taint)
	}
	if n.Initialized {
		taints = append(taints, n.StartupTaints...)
	}
	return hostname, FromLabels(lbls), taints
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
	for _, ds := range s.pendingDaemons(t.reqs, t.taints) {
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
// pending pod would otherwise match its selector against a million pods. Built on first use;
// bound pods do not change during a solve (pods placed by the solve are scanned separately).
type boundIndex struct {
	byLabel  map[string]map[string][]boundRef // label key -> value -> pods carrying it
	repelers []boundRef                       // pods with required anti-affinity (possible owners)
	all      int                              // number of bound pods
}

// boundRef is a bound pod by target and position in t.bound.
type boundRef struct{ t, i int32 }

func (s *solver) boundIndex() *boundIndex {
	if s.bound != nil {
		return s.bound
	}
	ix := &boundIndex{byLabel: map[string]map[string][]boundRef{}}
	for ti, t := range s.targets[:s.numExisting] {
		for pi, p := range t.bound {
			ref := boundRef{int32(ti), int32(pi)}
			ix.all++
			for k, v := range p.Labels {
				vals := ix.byLabel[k]
				if vals == nil {
					vals = map[string][]boundRef{}
					ix.byLabel[k] = vals
				}
				vals[v] = append(vals[v], ref)
			}
			if len(repelling(p)) > 0 {
				ix.repelers = append(ix.repelers, ref)
			}
		}
	}
	s.bound = ix
	return ix
}

// candidates returns the bound pods the group can concern, in target then pod order: those
// its selector's most selective equality (or existence) requirement lets through, plus, for
// anti-affinity, every pod that repels. ok=false: the selector has no such requirement (an
// empty selector, only NotIn/DoesNotExist...), and every bound pod must be read.
func (ix *boundIndex) candidates(g *topoGroup) ([]boundRef, bool) {
	reqs, selectable := g.selector.Requirements()
	if !selectable {
		// labels.Nothing(): matches no pod; only owners count.
		return sortedRefs(append([]boundRef(nil), ix.repelers...)), true
	}
	var best []boundRef
	found := false
	for _, r := range reqs {
		var refs []boundRef
		vals := ix.byLabel[r.Key()]
		switch r.Operator() {
		case "=", "==", "in":
			for v := range r.Values() {
				refs = append(refs, vals[v]...)
			}
		case "exists":
			for _, rs := range vals {
				refs = append(refs, rs...)
			}
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
	refs, ok := s.boundIndex().candidates(g)
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

// addRequests adds a pod's requests to v in place (no vector per bound pod).
func (s *solver) addRequests(v resVec, p *corev1.Pod) {
	for n, q := range podRequests(p) {
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
