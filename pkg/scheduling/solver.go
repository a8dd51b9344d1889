package scheduling

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// target is somewhere a pod can go: an existing (or in-flight) node, or a claim this solve
// creates. Existing nodes have fixed labels; claims have requirements that narrow as pods join
// and a set of instance types still able to hold everything on them.
type target struct {
	idx      int
	hostname string
	existing *ExistingNode
	pool     *poolState

	reqs   Requirements
	reqID  int32
	taints []corev1.Taint

	used  resVec // requests of pods on it (existing: bound pods too)
	avail resVec // existing: allocatable; claims: componentwise max of candidates' allocatable
	its   bitset // claims: candidate instance types (positions in pool.its)

	reserved resVec // claims: limit reservation (max capacity of candidates)

	ports   []hostPort
	bound   []*corev1.Pod
	pods    []*corev1.Pod // placed by this solve
	relaxed bool          // minValues relaxed (BestEffort)
}

func (t *target) allPods() []*corev1.Pod {
	if len(t.bound) == 0 {
		return t.pods
	}
	if len(t.pods) == 0 {
		return t.bound
	}
	return append(append([]*corev1.Pod(nil), t.bound...), t.pods...)
}

// poolState is a NodePool with its per-solve caches.
type poolState struct {
	np        *NodePool
	idx       int
	its       []*InstanceType
	alloc     []resVec // allocatable minus daemonset overhead
	overhead  []resVec // daemonset overhead per instance type
	capacity  []resVec
	dsPorts   []hostPort
	baseReqs  Requirements
	baseID    int32
	limited   []bool // resources with a limit
	remaining resVec
	compat    map[int32]bitset   // requirement-set ID → instance types compatible by labels & offerings
	ordered   map[int32][]priced // requirement-set ID → compatible types by price
	domains   map[string][]string
	// knownFn accepts a pod requirement on a key the pool does not constrain when the key is
	// well-known or some instance type of the pool defines it (the node will carry it).
	knownFn   func(string) bool
	baseAvail resVec // max allocatable over compatible types (unlimited pools)
	byName    []int
	// maxCapacity is the componentwise max capacity over the pool's compatible types.
	maxCapacity resVec
}

type priced struct {
	i     int
	price float64
}

type compatResult struct {
	err    error
	merged int32
}

type pinKey struct {
	id         int32
	key, value string
}

type solver struct {
	in          *Input
	opts        Options
	ri          *resourceIndex
	wellKnown   map[string]bool
	wellKnownFn func(string) bool
	volumes     *volumeIndex
	pools       []*poolState
	targets     []*target
	numExisting int
	claimSeq    int

	reqIDs  map[string]int32
	reqByID []Requirements
	hasMin  []bool
	compat  map[[2]int32]compatResult
	pins    map[pinKey]int32

	groups     []*topoGroup
	groupsByID map[string]*topoGroup
	ownedAnti  map[*corev1.Pod][]string

	anyPreferNoSchedule bool
	errors              map[*corev1.Pod]error
	claimTypes          map[string]*claimTypes
	typeIDs             map[*NodePool]string
}

// Solve places the input's pods. It is pure and deterministic: the same input gives the same
// result, and the input is not modified.
func Solve(in *Input) *Results {
	s := newSolver(in)
	s.run()
	return s.results()
}

func newSolver(in *Input) *solver {
	s := &solver{
		in:         in,
		opts:       in.Options,
		ri:         newResourceIndex(),
		reqIDs:     map[string]int32{},
		compat:     map[[2]int32]compatResult{},
		pins:       map[pinKey]int32{},
		groupsByID: map[string]*topoGroup{},
		ownedAnti:  map[*corev1.Pod][]string{},
		errors:     map[*corev1.Pod]error{},
		claimTypes: map[string]*claimTypes{},
		typeIDs:    map[*NodePool]string{},
		volumes:    newVolumeIndex(in),
	}
	if s.opts.PreferencePolicy == "" {
		s.opts.PreferencePolicy = PreferencePolicyRespect
	}
	if s.opts.MinValuesPolicy == "" {
		s.opts.MinValuesPolicy = MinValuesPolicyStrict
	}
	if s.opts.MaxInstanceTypes <= 0 {
		s.opts.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	wk := s.opts.WellKnownLabels
	if wk == nil {
		wk = DefaultWellKnownLabels
	}
	s.wellKnown = map[string]bool{}
	for _, k := range wk {
		s.wellKnown[k] = true
	}
	s.wellKnownFn = func(k string) bool { return s.wellKnown[k] }

	// Every resource name that appears anywhere gets a vector position.
	for _, np := range in.NodePools {
		s.ri.register(np.Remaining)
		if in.Cache != nil {
			if names := in.Cache.resourceNames(s.typesID(np), np.InstanceTypes); names != nil {
				for _, n := range names {
					s.ri.add(n)
				}
				continue
			}
		}
		for _, it := range np.InstanceTypes {
			s.ri.register(it.Capacity)
		}
	}
	for _, n := range in.ExistingNodes {
		s.ri.register(n.Allocatable)
	}
	for _, p := range in.Pods {
		s.ri.register(podRequests(p))
	}
	for _, p := range in.DaemonSetPods {
		s.ri.register(podRequests(p))
	}

	nps := append([]*NodePool(nil), in.NodePools...)
	sort.SliceStable(nps, func(i, j int) bool {
		if nps[i].Weight != nps[j].Weight {
			return nps[i].Weight > nps[j].Weight
		}
		return nps[i].Name < nps[j].Name
	})
	for i, np := range nps {
		s.pools = append(s.pools, s.newPool(i, np))
		for _, t := range np.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				s.anyPreferNoSchedule = true
			}
		}
	}

	nodes := append([]*ExistingNode(nil), in.ExistingNodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		ri, rj := nodes[i].Initialized && !nodes[i].InFlight, nodes[j].Initialized && !nodes[j].InFlight
		if ri != rj {
			return ri
		}
		return nodes[i].Name < nodes[j].Name
	})
	for _, n := range nodes {
		s.addExisting(n)
	}
	s.numExisting = len(s.targets)
	// Bound pods' required anti-affinity repels new pods (the inverse direction), so their
	// groups must exist before the first new pod is considered.
	for _, t := range s.targets {
		for _, p := range t.bound {
			if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					_, _ = s.affinityGroup(p, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], kindAnti)
				}
			}
		}
	}
	return s
}

func (s *solver) newPool(idx int, np *NodePool) *poolState {
	p := &poolState{np: np, idx: idx, its: np.InstanceTypes, compat: map[int32]bitset{}, ordered: map[int32][]priced{}, domains: map[string][]string{}}
	var pp *preparedPool
	key := ""
	if s.in.Cache != nil {
		key = s.prepKey(np)
		pp = s.in.Cache.get(key)
	}
	if pp != nil {
		// Cached entries are read-only: they may be in use by concurrent solves.
		p.baseReqs = pp.baseReqs
		p.baseID = s.intern(p.baseReqs)
		p.alloc, p.overhead, p.capacity, p.dsPorts = pp.alloc, pp.overhead, pp.capacity, pp.dsPorts
		p.compat[p.baseID] = pp.baseCompat
		p.ordered[p.baseID] = pp.baseOrdered
		p.byName = pp.byName
	} else {
		pp = s.prepare(np)
		p.baseReqs = pp.baseReqs
		p.baseID = s.intern(p.baseReqs)
		p.alloc, p.overhead, p.capacity, p.dsPorts = pp.alloc, pp.overhead, pp.capacity, pp.dsPorts
		pp.baseCompat = s.compatible(p, p.baseID)
		pp.baseOrdered = s.ordered(p, p.baseID)
		pp.byName = p.nameOrder()
		pp.baseAvail = s.maxAlloc(p, pp.baseCompat)
		if s.in.Cache != nil {
			s.in.Cache.put(key, pp)
		}
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
// vectors (allocatable net of daemonset overhead), daemonset host ports and the label keys
// its types define.
func (s *solver) prepare(np *NodePool) *preparedPool {
	pp := &preparedPool{itKeys: map[string]bool{}}
	pp.baseReqs = np.Requirements.Intersect(FromLabels(np.Labels)).With(NewRequirement(LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
	its := np.InstanceTypes
	var dsPods []*podInfo
	for _, ds := range s.in.DaemonSetPods {
		if ToleratesTaints(ds.Spec.Tolerations, np.Taints, false) != nil {
			continue
		}
		dsPods = append(dsPods, &podInfo{pod: ds, requests: s.ri.vec(podRequests(ds)), ports: podHostPorts(ds)})
	}
	for _, it := range its {
		for _, r := range it.Requirements.All() {
			pp.itKeys[r.Key] = true
		}
		for _, o := range it.Offerings {
			for _, r := range o.Requirements.All() {
				pp.itKeys[r.Key] = true
			}
		}
	}
	// One slab backs every per-type vector: a pool of 400 types costs three allocations here.
	n := len(s.ri.names)
	slab := make(resVec, 3*n*len(its))
	pp.alloc = make([]resVec, len(its))
	pp.overhead = make([]resVec, len(its))
	pp.capacity = make([]resVec, len(its))
	for i, it := range its {
		capv, alloc, over := slab[(3*i)*n:(3*i+1)*n:(3*i+1)*n], slab[(3*i+1)*n:(3*i+2)*n:(3*i+2)*n], slab[(3*i+2)*n:(3*i+3)*n:(3*i+3)*n]
		for name, q := range it.Capacity {
			if pos, ok := s.ri.pos[name]; ok {
				capv[pos] = quantityValue(name, q)
			}
		}
		copy(alloc, capv)
		for name, q := range it.Overhead {
			if pos, ok := s.ri.pos[name]; ok && it.Capacity != nil {
				if _, has := it.Capacity[name]; has {
					alloc[pos] -= quantityValue(name, q)
				}
			}
		}
		if len(dsPods) > 0 {
			node := pp.baseReqs.Intersect(its[i].Requirements.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, its[i].Name)))
			for _, d := range dsPods {
				if daemonCompatible(d.pod, node, s.wellKnownFn) {
					over.add(d.requests)
					over[resPods]++
				}
			}
			alloc.sub(over)
		}
		pp.alloc[i], pp.overhead[i], pp.capacity[i] = alloc, over, capv
	}
	for _, d := range dsPods {
		if daemonCompatible(d.pod, pp.baseReqs, s.wellKnownFn) {
			pp.dsPorts = append(pp.dsPorts, d.ports...)
		}
	}
	return pp
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

func (s *solver) addExisting(n *ExistingNode) {
	t := &target{idx: len(s.targets), existing: n, hostname: n.Name}
	if h, ok := n.Labels[LabelHostname]; ok {
		t.hostname = h
	}
	lbls := n.Labels
	if _, ok := lbls[LabelHostname]; !ok {
		lbls = make(map[string]string, len(n.Labels)+1)
		for k, v := range n.Labels {
			lbls[k] = v
		}
		lbls[LabelHostname] = t.hostname
	}
	t.reqs = FromLabels(lbls)
	t.reqID = s.intern(t.reqs)
	for _, taint := range n.Taints {
		if !n.Initialized && IsEphemeralTaint(taint) {
			continue
		}
		t.taints = append(t.taints, taint)
	}
	if n.Initialized {
		t.taints = append(t.taints, n.StartupTaints...)
	}
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
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		t.used.add(s.ri.vec(podRequests(p)))
		t.used[resPods]++
		t.ports = append(t.ports, podHostPorts(p)...)
		t.bound = append(t.bound, p)
	}
	if !n.Initialized || n.InFlight {
		s.pendingDaemonSets(t)
	}
	s.targets = append(s.targets, t)
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
	for _, ds := range s.in.DaemonSetPods {
		if ToleratesTaints(ds.Spec.Tolerations, t.taints, false) != nil || !daemonCompatible(ds, t.reqs, nil) {
			continue
		}
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

// intern gives equal requirement sets the same small ID, the key of every cache.
func (s *solver) intern(r Requirements) int32 {
	k := r.String()
	if id, ok := s.reqIDs[k]; ok {
		return id
	}
	id := int32(len(s.reqByID))
	s.reqIDs[k] = id
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

// compatible returns the instance types of p whose labels and available offerings can satisfy
// the requirement set id, computed once per (pool, requirement set).
func (s *solver) compatible(p *poolState, id int32) bitset {
	if b, ok := p.compat[id]; ok {
		return b
	}
	reqs := s.reqByID[id]
	b := newBitset(len(p.its))
	for i, it := range p.its {
		if !reqs.Has(LabelInstanceType, it.Name) || it.Requirements.Intersects(reqs) != nil {
			continue
		}
		for oi := range it.Offerings {
			if it.Offerings[oi].compatible(reqs) {
				b.set(i)
				break
			}
		}
	}
	p.compat[id] = b
	return b
}

// merge intersects a target's requirement set with a pod's, cached per pair of IDs.
func (s *solver) merge(t *target, podID int32) compatResult {
	k := [2]int32{t.reqID, podID}
	if r, ok := s.compat[k]; ok {
		return r
	}
	var r compatResult
	treqs, preqs := s.reqByID[t.reqID], s.reqByID[podID]
	if t.existing != nil {
		r.err = treqs.Compatible(preqs, nil)
		r.merged = t.reqID
	} else {
		// A claim's hostname is a placeholder, checked separately; keep it out of the merged set.
		preqs = preqs.Without(LabelHostname)
		r.err = treqs.Compatible(preqs, t.pool.knownFn)
		if r.err == nil {
			r.merged = s.intern(treqs.Intersect(preqs))
		}
	}
	s.compat[k] = r
	return r
}

func (s *solver) pin(id int32, key, value string) int32 {
	k := pinKey{id, key, value}
	if r, ok := s.pins[k]; ok {
		return r
	}
	r := s.intern(s.reqByID[id].With(NewRequirement(key, corev1.NodeSelectorOpIn, value)))
	s.pins[k] = r
	return r
}

// attempt is a pod with the constraints currently in force compiled for placement.
type attempt struct {
	p       *podInfo
	reqs    Requirements
	reqID   int32
	hostReq *Requirement
	own     []ownGroup
	inverse []*topoGroup
	counted []*topoGroup
	poolErr []error
	keys    []string // non-hostname topology keys involved, sorted
}

type ownGroup struct {
	g    *topoGroup
	self bool // the pod matches the group's own selector
}

func (s *solver) compile(p *podInfo) (*attempt, error) {
	if p.compiled != nil {
		// Only the parts that depend on other pods' placements are refreshed.
		s.refresh(p.compiled)
		return p.compiled, nil
	}
	a := &attempt{p: p, reqs: p.terms[0]}
	if len(p.prefNode) > 0 {
		a.reqs = a.reqs.Intersect(p.prefNode[0])
	}
	a.reqID = s.intern(a.reqs)
	if r, ok := a.reqs.Get(LabelHostname); ok {
		a.hostReq = &r
	}
	pod := p.pod
	addOwn := func(g *topoGroup, err error) error {
		if err != nil {
			return err
		}
		a.own = append(a.own, ownGroup{g: g, self: g.matches(pod)})
		return nil
	}
	// The kube-scheduler's nodeAffinityPolicy looks at required node affinity and node
	// selector only (not preferences, not volumes).
	filterReqs := p.affinityTerms[0]
	for i := range p.tscs {
		if err := addOwn(s.spreadGroup(pod, &p.tscs[i], filterReqs, pod.Spec.Tolerations)); err != nil {
			return nil, err
		}
	}
	if aff := pod.Spec.Affinity; aff != nil {
		if aff.PodAffinity != nil {
			for i := range aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if err := addOwn(s.affinityGroup(pod, &aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], kindAffinity)); err != nil {
					return nil, err
				}
			}
		}
		if aff.PodAntiAffinity != nil {
			for i := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if err := addOwn(s.affinityGroup(pod, &aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], kindAnti)); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range p.prefAff {
		if err := addOwn(s.affinityGroup(pod, &p.prefAff[i], kindAffinity)); err != nil {
			return nil, err
		}
	}
	for i := range p.prefAnti {
		if err := addOwn(s.affinityGroup(pod, &p.prefAnti[i], kindAnti)); err != nil {
			return nil, err
		}
	}
	a.poolErr = make([]error, len(s.pools))
	for i, pool := range s.pools {
		a.poolErr[i] = ToleratesTaints(pod.Spec.Tolerations, pool.np.Taints, !p.preferNoScheduleTolerated)
	}
	s.refresh(a)
	p.compiled = a
	return a, nil
}

// refresh recomputes the groups that count the pod (new groups may have appeared) and the
// anti-affinity groups whose owners now repel it.
func (s *solver) refresh(a *attempt) {
	if len(a.counted) != len(s.matchedGroups(a.p)) || a.keys == nil {
		a.counted = a.p.matched
		a.keys = s.topologyKeys(a)
		if a.keys == nil {
			a.keys = []string{}
		}
	}
	a.inverse = a.inverse[:0]
	for _, g := range a.counted {
		if g.kind == kindAnti && (len(g.owners) > 0 || len(g.hostOwners) > 0) {
			a.inverse = append(a.inverse, g)
		}
	}
}

func (s *solver) run() {
	queue := make([]*podInfo, 0, len(s.in.Pods))
	for _, pod := range s.in.Pods {
		queue = append(queue, s.newPodInfo(pod))
	}
	sort.SliceStable(queue, func(i, j int) bool { return podOrder(queue[i], queue[j]) })
	// Create every group up front, so that a pod counted by a group is pinned to a domain of
	// that group's key whenever it lands, even if it is placed before the constrained pods.
	for _, p := range queue {
		if p.invalid == nil {
			_, _ = s.compile(p)
		}
	}
	// Pods whose constraints depend on pods placed later (e.g. affinity to them) get another
	// pass while passes make progress.
	for len(queue) > 0 {
		var failed []*podInfo
		for _, p := range queue {
			if err := s.place(p); err != nil {
				s.errors[p.pod] = err
				failed = append(failed, p)
			} else {
				delete(s.errors, p.pod)
			}
		}
		if len(failed) == len(queue) {
			break
		}
		queue = failed
	}
}

// place tries the pod, relaxing one preference after each failure.
func (s *solver) place(p *podInfo) error {
	if p.invalid != nil {
		return p.invalid
	}
	for {
		a, err := s.compile(p)
		if err != nil {
			return err
		}
		err = s.placeAttempt(a)
		if err == nil {
			return nil
		}
		if !s.relax(p) {
			return err
		}
	}
}

func (s *solver) placeAttempt(a *attempt) error {
	for _, t := range s.targets[s.scanStart(a):] {
		if plan, ok := s.tryTarget(a, t); ok {
			s.commit(a, t, plan)
			return nil
		}
	}
	var errs []string
	for _, pool := range s.pools {
		t, plan, err := s.tryNewClaim(a, pool)
		if err == nil {
			t.idx = len(s.targets)
			s.targets = append(s.targets, t)
			s.commit(a, t, plan)
			return nil
		}
		errs = append(errs, fmt.Sprintf("incompatible with nodepool %s: %v", pool.np.Name, err))
	}
	if len(errs) == 0 {
		return fmt.Errorf("no nodepool or existing node can hold the pod")
	}
	return &PodError{Reasons: errs}
}

// scanStart skips targets that a hostname-keyed group rejects for good. Counts never decrease
// during a solve, so a target with a pod matching the pod's hostname anti-affinity (or one at
// the hostname spread limit) stays unusable; each group remembers how far that prefix reaches.
// This turns the quadratic scan of one-pod-per-node workloads into an amortised linear one.
func (s *solver) scanStart(a *attempt) int {
	start := 0
	for _, og := range a.own {
		g := og.g
		if !g.hostname {
			continue
		}
		var limit int32
		switch {
		case g.kind == kindAnti:
			limit = 0
		case g.kind == kindSpread && og.self && len(s.pools) > 0:
			limit = g.maxSkew - 1
		default:
			continue
		}
		// g.full[limit] is the length of the prefix of targets whose count exceeds limit.
		if g.full == nil {
			g.full = map[int32]int{}
		}
		i := g.full[limit]
		for i < len(s.targets) && getIdx(g.hostCounts, i) > limit {
			i++
		}
		g.full[limit] = i
		if i > start {
			start = i
		}
	}
	return start
}

// PodError lists, per NodePool, why a pod could not be placed.
type PodError struct {
	Reasons []string
}

func (e *PodError) Error() string { return strings.Join(e.Reasons, "; ") }

// plan is the state a claim moves to when a pod joins it.
type plan struct {
	reqID int32
	its   bitset
}

// tryTarget checks every constraint of the attempt against t, cheapest checks first.
func (s *solver) tryTarget(a *attempt, t *target) (plan, bool) {
	p := a.p
	// Hostname-keyed topology first: an array lookup rejects most crowded targets.
	for _, og := range a.own {
		if og.g.hostname && !s.domainAllowed(a, og, t, t.hostname) {
			return plan{}, false
		}
	}
	for _, g := range a.inverse {
		if g.hostname && getIdx(g.hostOwners, t.idx) > 0 {
			return plan{}, false
		}
	}
	if t.existing == nil {
		if a.poolErr[t.pool.idx] != nil || !sumFitsIn(t.used, p.requests, t.avail) {
			return plan{}, false
		}
		if a.hostReq != nil && !a.hostReq.Has(t.hostname) {
			return plan{}, false
		}
	} else {
		if !sumFitsIn(t.used, p.requests, t.avail) {
			return plan{}, false
		}
		if ToleratesTaints(p.pod.Spec.Tolerations, t.taints, !p.preferNoScheduleTolerated) != nil {
			return plan{}, false
		}
	}
	m := s.merge(t, a.reqID)
	if m.err != nil {
		return plan{}, false
	}
	if len(p.ports) > 0 {
		if _, c := portsConflict(t.ports, p.ports); c {
			return plan{}, false
		}
	}
	pl, err := s.topologyAndTypes(a, t, m.merged)
	return pl, err == nil
}

// domainAllowed checks one of the pod's own groups against a decided domain.
func (s *solver) domainAllowed(a *attempt, og ownGroup, t *target, d string) bool {
	g := og.g
	c := g.count(t, d)
	switch g.kind {
	case kindSpread:
		self := int32(0)
		if og.self {
			self = 1
		}
		if !g.hostname && !containsSorted(g.universe, d) {
			return false
		}
		return c+self-g.globalMin(len(s.pools) > 0, s.targets[:s.numExisting], s) <= g.maxSkew
	case kindAffinity:
		return c > 0 || (g.total == 0 && og.self)
	default:
		return c == 0
	}
}

// topologyAndTypes decides the target's topology domains for the pod (pinning undecided keys of
// a claim to one value) and, for claims, the instance types that remain.
func (s *solver) topologyAndTypes(a *attempt, t *target, merged int32) (plan, error) {
	for _, key := range a.keys {
		if d, ok := s.domainOf(t, key); ok || t.existing != nil {
			if err := s.fixedDomainErr(a, t, key, d, ok); err != nil {
				return plan{}, err
			}
			continue
		}
		// Undecided claim domain: try candidate domains in preference order.
		cands, err := s.candidates(a, t, key, merged)
		if err != nil {
			return plan{}, err
		}
		if cands == nil {
			continue
		}
		pinned := false
		for _, d := range cands {
			id := s.pin(merged, key, d)
			if _, ok := s.types(t, id, a.p.requests); ok {
				merged = id
				pinned = true
				break
			}
		}
		if !pinned {
			return plan{}, fmt.Errorf("no instance type in any allowed %s domain fits", key)
		}
	}
	if t.existing != nil {
		return plan{reqID: merged}, nil
	}
	its, ok := s.types(t, merged, a.p.requests)
	if !ok {
		return plan{}, s.explainTypes(t, merged, a.p.requests)
	}
	return plan{reqID: merged, its: its}, nil
}

// topologyKeys lists the non-hostname keys of every group involved, sorted.
func (s *solver) topologyKeys(a *attempt) []string {
	var keys []string
	add := func(k string) {
		if k == LabelHostname {
			return
		}
		for _, x := range keys {
			if x == k {
				return
			}
		}
		keys = append(keys, k)
	}
	for _, og := range a.own {
		add(og.g.key)
	}
	for _, g := range a.counted {
		add(g.key)
	}
	if len(keys) > 1 {
		sort.Strings(keys)
	}
	return keys
}

func (s *solver) fixedDomainOK(a *attempt, t *target, key, d string, has bool) bool {
	return s.fixedDomainErr(a, t, key, d, has) == nil
}

// fixedDomainErr checks the pod's groups on key against a decided domain d (has=false: the
// node lacks the key) and names the group that rejects it.
func (s *solver) fixedDomainErr(a *attempt, t *target, key, d string, has bool) error {
	for _, og := range a.own {
		if og.g.key != key {
			continue
		}
		if !has {
			// A node without the key: spread and affinity cannot be met there, anti-affinity is.
			if og.g.kind != kindAnti {
				return &topologyError{g: og.g}
			}
			continue
		}
		if !s.domainAllowed(a, og, t, d) {
			return &topologyError{g: og.g}
		}
	}
	if has {
		for _, g := range a.inverse {
			if g.key == key && g.ownersAt(t, d) > 0 {
				return &inverseError{g: g, domain: d}
			}
		}
	}
	return nil
}

// inverseError: a pod already in the domain has required anti-affinity against this pod.
type inverseError struct {
	g      *topoGroup
	domain string
}

func (e *inverseError) Error() string {
	return "pods in " + e.g.key + "=" + e.domain + " have anti-affinity to this pod (selector " + e.g.selector.String() + ")"
}

// candidates orders the domains an undecided claim could be pinned to for key. nil means the
// key needs no pinning (no known domains and nothing requiring one).
func (s *solver) candidates(a *attempt, t *target, key string, merged int32) ([]string, error) {
	reqs := s.reqByID[merged]
	var out []string
	for _, d := range s.poolDomains(t.pool, key) {
		if reqs.Has(key, d) && s.fixedDomainOK(a, t, key, d, true) {
			out = append(out, d)
		}
	}
	var spread, aff *topoGroup
	for _, og := range a.own {
		if og.g.key != key {
			continue
		}
		if og.g.kind == kindSpread && spread == nil {
			spread = og.g
		}
		if og.g.kind == kindAffinity && aff == nil {
			aff = og.g
		}
	}
	if len(out) == 0 {
		if spread != nil || aff != nil || len(s.poolDomains(t.pool, key)) > 0 {
			for _, og := range a.own {
				if og.g.key == key {
					return nil, &topologyError{g: og.g}
				}
			}
			return nil, fmt.Errorf("no %s domain available", key)
		}
		return nil, nil
	}
	var order *topoGroup
	switch {
	case spread != nil:
		order = spread
	case aff != nil:
		order = aff
	default:
		for _, g := range a.counted {
			if g.key == key && g.kind == kindSpread {
				order = g
				break
			}
		}
	}
	if order != nil {
		desc := order.kind == kindAffinity
		sort.SliceStable(out, func(i, j int) bool {
			ci, cj := order.counts[out[i]], order.counts[out[j]]
			if ci != cj {
				if desc {
					return ci > cj
				}
				return ci < cj
			}
			return out[i] < out[j]
		})
	}
	return out, nil
}

// types narrows a claim's instance types to those compatible with requirement set id that can
// still hold the claim's pods plus req. It honours minValues (unless BestEffort).
func (s *solver) types(t *target, id int32, req resVec) (bitset, bool) {
	compat := s.compatible(t.pool, id)
	out := make(bitset, len(t.its))
	any := false
	for wi := range t.its {
		w := t.its[wi] & compat[wi]
		for w != 0 {
			b := w & -w
			i := wi*64 + bits.TrailingZeros64(w)
			w ^= b
			if sumFitsIn(t.used, req, t.pool.alloc[i]) {
				out[wi] |= b
				any = true
			}
		}
	}
	if !any {
		return nil, false
	}
	if s.hasMin[id] && s.opts.MinValuesPolicy == MinValuesPolicyStrict {
		if _, ok := s.minValuesShortfall(t.pool, id, out); ok {
			return nil, false
		}
	}
	return out, true
}

// minValuesShortfall reports the first key whose minValues the instance types do not reach.
func (s *solver) minValuesShortfall(p *poolState, id int32, its bitset) (string, bool) {
	for _, r := range s.reqByID[id].reqs {
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		its.forEach(func(i int) {
			for _, v := range s.valuesOf(p, i, r.Key) {
				if r.Has(v) {
					seen[v] = true
				}
			}
		})
		if len(seen) < *r.MinValues {
			return fmt.Sprintf("minValues %d for %s not met (only %d values)", *r.MinValues, r.Key, len(seen)), true
		}
	}
	return "", false
}

// valuesOf is the set of values instance type i gives key.
func (s *solver) valuesOf(p *poolState, i int, key string) []string {
	it := p.its[i]
	switch key {
	case LabelZone, LabelCapacityType:
		var out []string
		for _, o := range it.Offerings {
			if o.Available {
				if key == LabelZone {
					out = append(out, o.Zone)
				} else {
					out = append(out, o.CapacityType)
				}
			}
		}
		return out
	}
	if key == LabelInstanceType {
		return []string{it.Name}
	}
	if r, ok := it.Requirements.Get(key); ok && !r.complement {
		return r.values
	}
	return nil
}

// tryNewClaim opens a claim from a NodePool for the pod.
func (s *solver) tryNewClaim(a *attempt, p *poolState) (*target, plan, error) {
	if err := a.poolErr[p.idx]; err != nil {
		return nil, plan{}, err
	}
	if q, ok := p.np.Remaining["nodes"]; ok && s.claimsOf(p) >= q.Value() {
		return nil, plan{}, fmt.Errorf("exceeds nodepool limits (nodes: %s)", q.String())
	}
	t := &target{idx: len(s.targets), pool: p, reqs: p.baseReqs, reqID: p.baseID, used: make(resVec, len(s.ri.names))}
	t.hostname = fmt.Sprintf("%s-placeholder-%d", p.np.Name, s.claimSeq)
	t.ports = append(t.ports, p.dsPorts...)
	if p.limited == nil || s.limitsCannotBind(p) {
		if p.baseAvail == nil {
			p.baseAvail = s.maxAlloc(p, s.compatible(p, p.baseID))
		}
		t.its = s.compatible(p, p.baseID)
		t.avail = p.baseAvail
	} else if err := s.limitTypes(t, p); err != nil {
		return nil, plan{}, err
	}
	if a.hostReq != nil && !a.hostReq.Has(t.hostname) {
		return nil, plan{}, fmt.Errorf("requires %s %s, which a new node cannot have", LabelHostname, a.hostReq.String())
	}
	if !sumFitsIn(t.used, a.p.requests, t.avail) {
		return nil, plan{}, s.explainTypes(t, p.baseID, a.p.requests)
	}
	if len(a.p.ports) > 0 {
		if hp, c := portsConflict(t.ports, a.p.ports); c {
			return nil, plan{}, fmt.Errorf("host port %s conflicts with a daemonset", hp)
		}
	}
	m := s.merge(t, a.reqID)
	if m.err != nil {
		return nil, plan{}, m.err
	}
	for _, og := range a.own {
		if og.g.hostname && !s.domainAllowed(a, og, t, t.hostname) {
			return nil, plan{}, &topologyError{g: og.g}
		}
	}
	pl, err := s.topologyAndTypes(a, t, m.merged)
	if err != nil {
		return nil, plan{}, err
	}
	s.claimSeq++
	return t, pl, nil
}

// itRequirements is instance type i's labels including its name.
func (s *solver) itRequirements(p *poolState, i int) Requirements {
	return p.its[i].Requirements.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, p.its[i].Name))
}

// nameOrder lists the pool's instance type positions sorted by name.
func (p *poolState) nameOrder() []int {
	if p.byName == nil {
		p.byName = make([]int, len(p.its))
		for i := range p.byName {
			p.byName[i] = i
		}
		sort.SliceStable(p.byName, func(a, b int) bool { return p.its[p.byName[a]].Name < p.its[p.byName[b]].Name })
	}
	return p.byName
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

func (s *solver) maxAlloc(p *poolState, its bitset) resVec {
	out := make(resVec, len(s.ri.names))
	its.forEach(func(i int) {
		for r, v := range p.alloc[i] {
			if v > out[r] {
				out[r] = v
			}
		}
	})
	return out
}

// pinTarget decides an undecided claim's domain for key, for a group created after pods that
// it counts were placed on the claim. It keeps the claim's instance types non-empty.
func (s *solver) pinTarget(t *target, key string, g *topoGroup) (string, bool) {
	cands := append([]string(nil), s.poolDomains(t.pool, key)...)
	sort.SliceStable(cands, func(i, j int) bool { return g.counts[cands[i]] < g.counts[cands[j]] })
	zero := make(resVec, len(s.ri.names))
	for _, d := range cands {
		if !t.reqs.Has(key, d) {
			continue
		}
		id := s.pin(t.reqID, key, d)
		if its, ok := s.types(t, id, zero); ok {
			s.commit(nil, t, plan{reqID: id, its: its})
			return d, true
		}
	}
	return "", false
}

// commit applies a successful attempt (a nil attempt only updates the claim's state).
func (s *solver) commit(a *attempt, t *target, pl plan) {
	if t.existing == nil && pl.its != nil && equalBits(pl.its, t.its) && (t.pool.limited == nil || t.reserved != nil) {
		t.reqID = pl.reqID
		t.reqs = s.reqByID[pl.reqID]
	} else if t.existing == nil {
		t.reqID = pl.reqID
		t.reqs = s.reqByID[pl.reqID]
		t.its = pl.its
		t.avail = s.maxAlloc(t.pool, t.its)
		if t.pool.limited != nil {
			res := make(resVec, len(s.ri.names))
			t.its.forEach(func(i int) {
				for r, v := range t.pool.capacity[i] {
					if t.pool.limited[r] && v > res[r] {
						res[r] = v
					}
				}
			})
			if t.reserved != nil {
				t.pool.remaining.add(t.reserved)
			}
			t.pool.remaining.sub(res)
			t.reserved = res
		}
		if s.hasMin[pl.reqID] && s.opts.MinValuesPolicy == MinValuesPolicyBestEffort {
			if _, short := s.minValuesShortfall(t.pool, pl.reqID, t.its); short {
				t.relaxed = true
			}
		}
	}
	if a == nil {
		return
	}
	p := a.p
	t.used.add(p.requests)
	t.ports = append(t.ports, p.ports...)
	t.pods = append(t.pods, p.pod)
	for _, g := range s.matchedGroups(p) {
		s.recordInGroup(g, p.pod, t)
	}
	for _, id := range s.ownedAntiIdentities(p.pod) {
		// Owner counts of groups the pod matches were recorded above; groups it owns but does
		// not match are recorded here.
		if g, ok := s.groupsByID[id]; ok && !g.matches(p.pod) {
			s.recordInGroup(g, p.pod, t)
		}
	}
}

func (s *solver) results() *Results {
	r := &Results{PodErrors: s.errors}
	for _, t := range s.targets {
		if len(t.pods) == 0 {
			continue
		}
		if t.existing != nil {
			r.ExistingNodes = append(r.ExistingNodes, ExistingPlacement{Node: t.existing, Pods: t.pods})
			continue
		}
		r.NewClaims = append(r.NewClaims, s.newClaim(t))
	}
	return r
}

// ordered returns a pool's instance types compatible with requirement set id, cheapest first,
// each with its cheapest compatible available offering's price.
func (s *solver) ordered(p *poolState, id int32) []priced {
	if o, ok := p.ordered[id]; ok {
		return o
	}
	reqs := s.reqByID[id]
	var out []priced
	s.compatible(p, id).forEach(func(i int) {
		best := math.Inf(1)
		for oi := range p.its[i].Offerings {
			o := &p.its[i].Offerings[oi]
			if o.compatible(reqs) && o.Price < best {
				best = o.Price
			}
		}
		out = append(out, priced{i: i, price: best})
	})
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].price != out[b].price {
			return out[a].price < out[b].price
		}
		return p.its[out[a].i].Name < p.its[out[b].i].Name
	})
	p.ordered[id] = out
	return out
}

// claimTypes is the instance-type part of a claim's result. Claims whose requirement set and
// candidate types are equal share one (the slices are read-only).
type claimTypes struct {
	its      []*InstanceType
	names    []string
	price    float64
	overhead corev1.ResourceList
}

func (s *solver) newClaim(t *target) *NewClaim {
	c := &NewClaim{Hostname: t.hostname, NodePool: t.pool.np, Pods: t.pods, MinValuesRelaxed: t.relaxed}
	c.Requests = s.ri.list(t.used)
	var key strings.Builder
	fmt.Fprintf(&key, "%d/%d", t.pool.idx, t.reqID)
	for _, w := range t.its {
		fmt.Fprintf(&key, "/%x", w)
	}
	ct, ok := s.claimTypes[key.String()]
	if !ok {
		ct = s.chooseTypes(t)
		s.claimTypes[key.String()] = ct
	}
	c.InstanceTypes, c.Price, c.DaemonSetOverhead = ct.its, ct.price, ct.overhead
	c.Requirements = t.reqs.With(Requirement{Key: LabelInstanceType, values: ct.names})
	return c
}

// chooseTypes orders a claim's candidate types by price and keeps the first MaxInstanceTypes,
// plus, past the cap, any type that brings a value minValues still lacks.
func (s *solver) chooseTypes(t *target) *claimTypes {
	var mins []Requirement
	for _, r := range t.reqs.reqs {
		if r.MinValues != nil {
			mins = append(mins, r)
		}
	}
	seen := make([]map[string]bool, len(mins))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	needMore := func() bool {
		for i, r := range mins {
			if len(seen[i]) < *r.MinValues {
				return true
			}
		}
		return false
	}
	ordered := s.ordered(t.pool, t.reqID)
	chosen := make([]priced, 0, min(len(ordered), s.opts.MaxInstanceTypes))
	for _, pr := range ordered {
		if !t.its.has(pr.i) {
			continue
		}
		if len(chosen) >= s.opts.MaxInstanceTypes {
			adds := false
			for mi, r := range mins {
				if len(seen[mi]) >= *r.MinValues {
					continue
				}
				for _, v := range s.valuesOf(t.pool, pr.i, r.Key) {
					if r.Has(v) && !seen[mi][v] {
						adds = true
					}
				}
			}
			if !adds || !needMore() {
				continue
			}
		}
		chosen = append(chosen, pr)
		for mi, r := range mins {
			for _, v := range s.valuesOf(t.pool, pr.i, r.Key) {
				if r.Has(v) {
					seen[mi][v] = true
				}
			}
		}
	}
	ct := &claimTypes{its: make([]*InstanceType, 0, len(chosen))}
	for _, pr := range chosen {
		ct.its = append(ct.its, t.pool.its[pr.i])
	}
	if len(chosen) > 0 {
		ct.price = chosen[0].price
		ct.overhead = s.ri.list(t.pool.overhead[chosen[0].i])
	}
	// The instance-type requirement lists names sorted; walking the pool's name order avoids a
	// sort per claim.
	chosenBits := newBitset(len(t.pool.its))
	for _, pr := range chosen {
		chosenBits.set(pr.i)
	}
	ct.names = make([]string, 0, len(chosen))
	for _, i := range t.pool.nameOrder() {
		if chosenBits.has(i) {
			ct.names = append(ct.names, t.pool.its[i].Name)
		}
	}
	ct.names = dedupSorted(ct.names)
	return ct
}
