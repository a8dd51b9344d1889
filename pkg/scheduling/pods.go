package scheduling

import (
	"cmp"
	"errors"
	"math/bits"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podInfo is a pod plus its constraints in the form the solver uses, including the soft ones
// still in force. Relaxation removes soft constraints one at a time.
//
// A podInfo is small: the constraints live behind a pointer (podCons), and pods without any
// (most pods, and every pod of a bin-packing workload) share one read-only podCons per mode
// instead of a copy each; relax copies a shared one before changing it. The attempt a pod is
// compiled into lives in the solver's scratch while the pod is placed (compile.go), and in the
// pod only when something keeps it (topology groups, a failure to retry).
type podInfo struct {
	*podCons
	pod      *corev1.Pod
	requests resVec
	builtin  [numBuiltinResources]int64 // the pod's builtin requests (requests uses it when it can)
	extra    bool                       // the pod requests other resources too
	shared   bool                       // podCons is one of the solver's shared plain ones: copy before relaxing
	compiled *attempt                   // constraints in force, compiled; reset by relax
	ownAtt   *attempt                   // the attempt of a pod with topology groups (compile.go)
	matched  []*topoGroup               // groups whose selector counts this pod
	// matchedTo: s.groups[:matchedTo] have been tested
	matchedTo int
	owned     []string // ownedAntiIdentities of a pod that repels, once ownedRead
	ownedRead bool
	moves     uint8 // repack: whether the pod may move between claims (moveYes), once known
	filled    bool  // fillRoom moved it into another claim
}

// podCons are a pod's constraints as initPodInfo reads them, and what relaxation leaves.
type podCons struct {
	tols  []corev1.Toleration // pod.Spec.Tolerations, read while the pod is in cache
	ports []hostPort
	// terms are the required alternatives (nodeSelector ∧ one node affinity term ∧ one volume
	// alternative); only terms[0] is in force, relaxation drops it while others remain.
	terms []Requirements
	// affinityTerms[i] is terms[i] without volume requirements.
	affinityTerms []Requirements
	prefNode      []Requirements // heaviest first; prefNode[0] is in force
	prefAff       []corev1.PodAffinityTerm
	prefAnti      []corev1.PodAffinityTerm
	// prefAffG and prefAntiG are the groups of prefAff and prefAnti, once resolved (compile.go);
	// relaxation drops from both.
	prefAffG, prefAntiG []*topoGroup
	tscs                []corev1.TopologySpreadConstraint
	// preferNoScheduleTolerated: PreferNoSchedule taints no longer act as hard taints.
	preferNoScheduleTolerated bool
	invalid                   error

	repels bool // has required anti-affinity: owns groups that repel other pods
	affine bool // has required pod affinity
}

// plain reports whether c constrains nothing: the podCons every plain pod shares.
func (c *podCons) plain() bool {
	return len(c.tols) == 0 && len(c.ports) == 0 && len(c.terms) == 1 && &c.terms[0] == &noTerms[0] &&
		len(c.affinityTerms) == 1 && &c.affinityTerms[0] == &noTerms[0] && len(c.prefNode) == 0 &&
		len(c.prefAff) == 0 && len(c.prefAnti) == 0 && len(c.tscs) == 0 && c.invalid == nil && !c.repels && !c.affine
}

// initPodInfo fills in everything but the requests. A pod without constraints gets the
// solver's shared plain podCons.
func (s *solver) initPodInfo(p *podInfo, pod *corev1.Pod) {
	c := &s.consBuf
	*c = podCons{}
	p.pod = pod
	s.readCons(c, pod)
	mode := 0
	if c.preferNoScheduleTolerated {
		mode = 1
	}
	if c.plain() {
		if s.plainCons[mode] == nil {
			s.plainCons[mode] = &podCons{}
			*s.plainCons[mode] = *c
		}
		p.podCons, p.shared = s.plainCons[mode], true
		return
	}
	own := &s.consSlab.take(1)[0]
	*own = *c
	p.podCons = own
}

// readCons reads the pod's constraints into c (zero on entry).
func (s *solver) readCons(p *podCons, pod *corev1.Pod) {
	p.ports, p.tols = podHostPorts(pod), pod.Spec.Tolerations
	p.repels = len(repelling(pod)) > 0
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		p.affine = len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	}
	ignore := s.opts.PreferencePolicy == PreferencePolicyIgnore
	p.preferNoScheduleTolerated = ignore

	var base Requirements
	if len(pod.Spec.NodeSelector) > 0 {
		base = FromLabels(pod.Spec.NodeSelector)
	}
	var terms []Requirements
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		na := a.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				if len(t.MatchFields) > 0 {
					p.invalid = errors.New("node affinity matchFields is not supported")
				}
				terms = append(terms, base.Intersect(FromNodeSelectorRequirements(t.MatchExpressions...)))
			}
		}
		if !ignore {
			prefs := append([]corev1.PreferredSchedulingTerm(nil), na.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].Weight > prefs[j].Weight })
			for _, t := range prefs {
				if len(t.Preference.MatchFields) > 0 {
					continue
				}
				p.prefNode = append(p.prefNode, FromNodeSelectorRequirements(t.Preference.MatchExpressions...))
			}
		}
	}
	if len(terms) == 0 {
		if base.Len() == 0 {
			terms = noTerms // shared: relaxation only reslices terms
		} else {
			terms = []Requirements{base}
		}
	}
	vol, err := s.volumes.requirements(pod)
	if err != nil {
		p.invalid = err
	}
	p.terms = crossRequirements(terms, vol)
	// Spread constraints' nodeAffinityPolicy considers the pod's node selector and affinity,
	// not its volumes' topology: keep that part of each alternative aside.
	if vol == nil {
		p.affinityTerms = p.terms
	} else {
		for _, t := range terms {
			for range vol {
				p.affinityTerms = append(p.affinityTerms, t)
			}
		}
	}

	if a := pod.Spec.Affinity; a != nil && !ignore {
		if a.PodAffinity != nil {
			p.prefAff = weighted(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			p.prefAnti = weighted(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	// The pod's own slice is shared unless some constraint is dropped (relax copies before
	// removing one).
	p.tscs = pod.Spec.TopologySpreadConstraints
	if ignore {
		for i := range p.tscs {
			if p.tscs[i].WhenUnsatisfiable == corev1.ScheduleAnyway {
				p.tscs = nil
				for _, c := range pod.Spec.TopologySpreadConstraints {
					if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
						p.tscs = append(p.tscs, c)
					}
				}
				break
			}
		}
	}
	// Refused whatever else the pod requires (upstream checks this first, so its error wins over a
	// volume's); the constraints are still read, for Placement's users.
	if !s.opts.SimulateDRARequests && HasDRARequests(pod) {
		p.invalid = errDRA
	}
}

// noTerms is the terms of a pod without node selector, required node affinity or volume
// topology: one empty alternative.
var noTerms = []Requirements{{}}

func weighted(ts []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	ts = append([]corev1.WeightedPodAffinityTerm(nil), ts...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Weight > ts[j].Weight })
	out := make([]corev1.PodAffinityTerm, len(ts))
	for i := range ts {
		out[i] = ts[i].PodAffinityTerm
	}
	return out
}

// hasGroups reports whether the pod has constraints in force that are topology groups (see
// appendTopologyGroups); most pods have none.
func (p *podInfo) hasGroups() bool {
	return len(p.tscs) > 0 || p.affine || p.repels || len(p.prefAff) > 0 || len(p.prefAnti) > 0
}

// canRelax reports whether relax would change anything (without changing it).
func (s *solver) canRelax(p *podInfo) bool {
	if len(p.terms) > 1 || len(p.prefAff) > 0 || len(p.prefAnti) > 0 || len(p.prefNode) > 0 {
		return true
	}
	for _, c := range p.tscs {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			return true
		}
	}
	return !p.preferNoScheduleTolerated && s.anyPreferNoSchedule
}

// relax drops one soft constraint in upstream's order: an extra required node affinity term,
// then preferred pod affinity, preferred pod anti-affinity, preferred node affinity (heaviest
// first in each), ScheduleAnyway spread constraints, and finally starts tolerating
// PreferNoSchedule taints. It reports whether anything changed.
func (s *solver) relax(p *podInfo) bool {
	p.compiled = nil
	if p.shared {
		c := *p.podCons
		p.podCons, p.shared = &c, false
	}
	switch {
	case len(p.terms) > 1:
		p.terms = p.terms[1:]
		p.affinityTerms = p.affinityTerms[1:]
	case len(p.prefAff) > 0:
		p.prefAff = p.prefAff[1:]
		if p.prefAffG != nil {
			p.prefAffG = p.prefAffG[1:]
		}
	case len(p.prefAnti) > 0:
		p.prefAnti = p.prefAnti[1:]
		if p.prefAntiG != nil {
			p.prefAntiG = p.prefAntiG[1:]
		}
	case len(p.prefNode) > 0:
		p.prefNode = p.prefNode[1:]
	default:
		for i, c := range p.tscs {
			if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
				p.tscs = append(append([]corev1.TopologySpreadConstraint(nil), p.tscs[:i]...), p.tscs[i+1:]...)
				return true
			}
		}
		if !p.preferNoScheduleTolerated && s.anyPreferNoSchedule {
			p.preferNoScheduleTolerated = true
			return true
		}
		return false
	}
	return true
}

// matchedGroups returns the groups counting this pod, testing groups created since last call.
// The list is cut from the solve's slab at its length (a later group that counts the pod
// appends to a copy).
func (s *solver) matchedGroups(p *podInfo) []*topoGroup {
	if p.matchedTo == len(s.groups) {
		return p.matched
	}
	buf := s.matchBuf[:0]
	if p.matchedTo == 0 && len(s.groups) > 4 {
		buf = s.groupIdx.appendMatching(buf, p.pod)
		p.matchedTo = len(s.groups)
	}
	for ; p.matchedTo < len(s.groups); p.matchedTo++ {
		if g := s.groups[p.matchedTo]; g.matches(p.pod) {
			buf = append(buf, g)
		}
	}
	s.matchBuf = buf
	switch {
	case len(buf) == 0:
	case len(p.matched) == 0:
		p.matched = s.groupSlab.take(len(buf))
		copy(p.matched, buf)
	default:
		p.matched = append(p.matched, buf...)
	}
	return p.matched
}

// podOrder sorts the queue like upstream: larger cpu first, then larger memory, then older,
// then by UID/name so that the result is deterministic.
func podOrder(a, b *podInfo) bool {
	return queueLess(a.requests[resCPU], a.requests[resMemory], a.pod, b.requests[resCPU], b.requests[resMemory], b.pod)
}

// queueLess is podOrder on a pod's cpu (millicores) and memory (bytes) requests.
func queueLess(aCPU, aMem int64, a *corev1.Pod, bCPU, bMem int64, b *corev1.Pod) bool {
	if aCPU != bCPU {
		return aCPU > bCPU
	}
	if aMem != bMem {
		return aMem > bMem
	}
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// queueKey is podOrder's sort key copied out of the pod, so that sorting compares flat
// values instead of chasing pointers into every pod.
type queueKey struct {
	cpu, mem int64
	sec      int64
	nsec     int32
	idx      int32
	// uk is 8 bytes of the UID from the position where the queue's UIDs first differ (uidFrom),
	// big-endian and zero-padded: comparing it orders UIDs as strings.Compare does whenever it
	// differs, with one integer compare instead of a string compare (uid then breaks its ties).
	uk uint64
}

// uidKey is the 8 bytes of uid from position from, big-endian, zero-padded.
func uidKey(uid string, from int) uint64 {
	var k uint64
	for i := 0; i < 8; i++ {
		k <<= 8
		if j := from + i; j < len(uid) {
			k |= uint64(uid[j])
		}
	}
	return k
}

// readPods fills podInfos (constraints, builtin requests) and queueKeys from the pods (see
// newSolver), touching each pod once.
func (s *solver) readPods(pods []*corev1.Pod) {
	var sc scratch
	if s.sc != nil {
		sc = *s.sc
	}
	s.podInfos = sized(sc.podInfos, len(pods))
	s.queueKeys = sized(sc.queueKeys, len(pods))
	s.uids = sized(sc.uids, len(pods))
	uids := s.uids
	from := -1 // length of the prefix every UID shares
	for i, pod := range pods {
		p := &s.podInfos[i]
		b := s.ri.readBuiltin(podRequests(pod))
		p.builtin, p.extra = b.v, b.extra
		s.initPodInfo(p, pod)
		ts := pod.CreationTimestamp.Time
		u := string(pod.UID)
		uids[i] = u
		s.queueKeys[i] = queueKey{idx: int32(i), cpu: b.v[resCPU], mem: b.v[resMemory], sec: ts.Unix(), nsec: int32(ts.Nanosecond()), uk: uidKey(u, 0)}
		if from < 0 {
			from = len(u)
		}
		n, j := min(from, len(u)), 0
		for j < n && u[j] == uids[0][j] {
			j++
		}
		from = j
	}
	// UIDs often share a prefix (a namespace, a name stem): the integer keys start after it.
	if from > 0 {
		for i, u := range uids {
			s.queueKeys[i].uk = uidKey(u, from)
		}
	}
}

// sortedQueue returns the podInfos readPods made, in podOrder, with their request vectors:
// a pod naming builtin resources only (most) uses its podInfo's own array when the solve knows
// no other resource, any other a vector from the solver's slab.
func sortedQueue(s *solver, pods []*corev1.Pod) []*podInfo {
	keys := s.queueKeys
	sortQueueKeys(keys, pods)
	n := len(s.ri.names)
	var buf []*podInfo
	if s.sc != nil {
		buf = s.sc.queue
	}
	queue := sized(buf, len(keys))
	s.queue = queue
	for k := range keys {
		i := keys[k].idx
		p := &s.podInfos[i]
		var req resVec
		switch {
		case p.extra:
			req = resVec(s.vecs.take(n))
			s.ri.fill(req, podRequests(pods[i]))
		case n == numBuiltinResources:
			req = p.builtin[:]
		default:
			req = resVec(s.vecs.take(n))
			copy(req, p.builtin[:])
		}
		req[resPods]++
		p.requests = req
		queue[k] = p
	}
	return queue
}

// Sorting the queue. A solve of thousands of pods spends a good part of its time here with a
// generic sort (a closure call per comparison, large keys moved): sortQueueKeys is a quicksort
// specialised to queueKey, whose comparison is a few integer compares in all but rare ties.

// keyLess is podOrder on queue keys.
func keyLess(a, b *queueKey, pods []*corev1.Pod) bool {
	if a.cpu != b.cpu {
		return a.cpu > b.cpu
	}
	if a.mem != b.mem {
		return a.mem > b.mem
	}
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	if a.uk != b.uk {
		return a.uk < b.uk
	}
	return keyTieLess(a, b, pods)
}

// keyTieLess breaks the ties uk leaves: the whole UID, then namespace, name, input position.
func keyTieLess(a, b *queueKey, pods []*corev1.Pod) bool {
	pa, pb := pods[a.idx], pods[b.idx]
	if c := strings.Compare(string(pa.UID), string(pb.UID)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(pa.Namespace, pb.Namespace); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(pa.Name, pb.Name); c != 0 {
		return c < 0
	}
	return a.idx < b.idx
}

// sortQueueKeys sorts keys by keyLess. Every key is distinct (input positions are), so the
// result does not depend on the algorithm.
func sortQueueKeys(keys []queueKey, pods []*corev1.Pod) {
	depth := 2 * bits.Len(uint(len(keys)))
	for len(keys) > 12 {
		if depth == 0 {
			slices.SortFunc(keys, func(a, b queueKey) int {
				if keyLess(&a, &b, pods) {
					return -1
				}
				return 1
			})
			return
		}
		depth--
		// Median of three as pivot, moved to the front.
		m, l := len(keys)/2, len(keys)-1
		if keyLess(&keys[m], &keys[0], pods) {
			keys[m], keys[0] = keys[0], keys[m]
		}
		if keyLess(&keys[l], &keys[0], pods) {
			keys[l], keys[0] = keys[0], keys[l]
		}
		if keyLess(&keys[l], &keys[m], pods) {
			keys[l], keys[m] = keys[m], keys[l]
		}
		keys[0], keys[m] = keys[m], keys[0]
		pivot := keys[0]
		i, j := 1, l
		for {
			for i <= j && keyLess(&keys[i], &pivot, pods) {
				i++
			}
			for i <= j && keyLess(&pivot, &keys[j], pods) {
				j--
			}
			if i >= j {
				break
			}
			keys[i], keys[j] = keys[j], keys[i]
			i++
			j--
		}
		keys[0], keys[j] = keys[j], keys[0]
		// Recurse into the smaller side, loop on the larger.
		if j < len(keys)-j-1 {
			sortQueueKeys(keys[:j], pods)
			keys = keys[j+1:]
		} else {
			sortQueueKeys(keys[j+1:], pods)
			keys = keys[:j]
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keyLess(&keys[j], &keys[j-1], pods); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// FollowsItsNode reports whether the pod is a DaemonSet's or a static pod's
// mirror (owned by its Node): it is where it is because of the node, so it
// neither asks for a node nor moves with a workload.
func FollowsItsNode(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" || o.Kind == "Node" {
			return true
		}
	}
	return false
}

// OwnedByDaemonSet reports whether the pod belongs to a DaemonSet (one of its
// owners is): its requests are daemon overhead, not workload.
func OwnedByDaemonSet(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
