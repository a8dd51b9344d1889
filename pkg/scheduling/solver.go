package scheduling

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The solver's files, by concept: solver.go (this file) the queue and its loop; pods.go a pod's
// constraints and their relaxation; compile.go the constraints in force, interned; targets.go
// trying and committing a pod on a target; existing.go existing and in-flight nodes; claims.go
// NodePools and the claims opened from them; instancetypes.go the instance types a claim keeps;
// topology.go topology groups and their counts; domains.go checking and pinning domains;
// placement.go the same constraints compiled for callers that predict Solve.

type solver struct {
	in   *Input
	opts Options
	// daemons are Input.DaemonSetPods, without those with Dynamic Resource Allocation requests
	// unless Options.SimulateDRARequests (a refused daemon is no node's overhead).
	daemons     []*corev1.Pod
	ri          *resourceIndex
	wellKnown   map[string]bool
	wellKnownFn func(string) bool
	volumes     *volumeIndex
	pools       []*poolState
	targets     []*target
	numExisting int
	claimSeq    int

	reqIDs  map[string]int32
	emptyID int32 // ID of the empty requirement set, -1 until interned
	reqByID []Requirements
	reqKeys []string // by ID: the set's canonical key (appendKey), uniqueKey for internUnique's
	cache   *Cache   // Input.Cache (nil: nothing is kept between solves)
	hasMin  []bool
	compat  map[[2]int32]compatResult
	pins    map[pinKey]int32

	groups     []*topoGroup
	groupsByID map[string]*topoGroup
	groupIdx   groupIndex
	groupBuf   []*topoGroup // scratch for compile
	ownedAnti  map[*corev1.Pod][]string
	oneAnti    map[string][]string // ownedAnti's lists of one identity, shared
	idIntern   map[string]string   // affinity identities, one copy each
	idBuf      []byte              // scratch for affinityIdentity
	bound      *boundIndex         // bound pods of existing targets by label (see existing.go)
	room       *roomIndex          // free capacity of existing targets (see existing.go)
	views      []*setView          // the existing-node sets the targets come from (existingset.go)
	// shapeCompat: (shape, pod) requirement-set IDs -> compatible (existingAdmits).
	shapeCompat map[[2]int32]bool
	shapes      []solverShape // existing nodes' shapes met in this solve (existingset.go)
	shapeMasks  map[shapeMaskKey]shapeMaskEntry
	filterIDs   map[*nodeFilter]int32 // spread node filters' requirement-set IDs
	admitMisses int                   // existing nodes that refused a pod for labels or taints

	noTolPoolErr        [2][]error // poolErrors for pods without tolerations, by preferNoSchedule mode
	anyPreferNoSchedule bool
	errors              map[*corev1.Pod]error
	claimTypes          map[string]*claimTypes
	requestLists        map[string]corev1.ResourceList // claims' Requests by usage vector (shared, read-only)
	claimReqs           map[claimReqsKey]Requirements  // claims' result requirements
	typeIDs             map[*NodePool]string
	keyBuf              []byte            // scratch for map keys built per claim or pod
	projBuf             []byte            // scratch for labelCompatible's keys
	internBuf           []byte            // scratch for intern's keys
	podInfos            []podInfo         // by input position
	queueKeys           []queueKey        // by input position until sortedQueue sorts them
	uids                []string          // by input position (readPods)
	queue               []*podInfo        // sortedQueue's result
	sc                  *scratch          // pooled memory this solve uses (scratch.go), nil outside Solve
	consBuf             podCons           // scratch for initPodInfo
	plainCons           [2]*podCons       // shared by pods without constraints, by preferNoSchedule mode
	consSlab            slab[podCons]     // constraints of the other pods
	scratchAtt          attempt           // the attempt of a pod being placed (compile.go)
	lastPlaced          *target           // where commit put the last pod (placeRun)
	minStart            int               // placeRun: targets before it are known to reject the pod
	oneByOne            bool              // tests: no placeRun, every pod placed on its own
	attSlab             slab[attempt]     // attempts pods keep
	bits                slab[uint64]      // claims' instance-type bitsets (narrow.go)
	vecs                slab[int64]       // claims' allocatable bounds
	podPtrs             slab[*corev1.Pod] // targets' placed pods while solving (growPods)
	infoPtrs            slab[*podInfo]    // the same pods' podInfos (target.infos)
	rs                  *repackScratch    // repack's buffers (nil outside a pooled scratch)
	claimSlab           slab[target]      // claims opened by this solve (tryNewClaim)
	chosenBuf           []priced          // chooseTypes' scratch
	prices              slab[priced]      // ordered lists when no Cache keeps them
	ints                slab[int]         // pools' name orders when no Cache keeps them
	counts              slab[int32]       // hostname groups' counts by target (growIdx)
	groupMem            slab[topoGroup]   // the solve's topology groups (newGroup)
	// Per-pod lists that die with the solve (matched groups, own groups, topology keys,
	// inverse groups) are cut from these slabs at their exact length, built in the buffers.
	vecHdrs   slab[resVec] // a pool's per-type vectors when no Cache keeps them (prepare)
	groupSlab slab[*topoGroup]
	ownSlab   slab[ownGroup]
	strSlab   slab[string]
	matchBuf  []*topoGroup
	keysBuf   []string
	eqKeys    []string // boundCandidatesEq's scratch
	candBuf   []string // candidates' result (used before the next call)
}

// Solve places the input's pods. It is pure and deterministic: the same input gives the same
// result, and the input is not modified.
func Solve(in *Input) *Results {
	s := newSolver(in)
	s.run()
	s.repack()
	s.fillRoom()
	r := s.results()
	s.releaseScratch()
	r.bookReservations(newReservationBook(in.NodePools))
	return r
}

func newSolver(in *Input) *solver {
	s := newBareSolver(in)
	s.useScratch()
	s.cache = in.Cache
	// Every resource name that appears anywhere gets a vector position.
	for _, np := range in.NodePools {
		s.ri.register(np.Remaining)
		if s.cache != nil {
			for _, n := range s.cache.resourceNames(s.typesID(np), np.InstanceTypes) {
				s.ri.add(n)
			}
			continue
		}
		for _, it := range np.InstanceTypes {
			s.ri.register(it.Capacity)
		}
	}
	for _, n := range in.ExistingNodes {
		s.ri.register(n.Allocatable)
	}
	// Every pod is read here, once, in input order: its constraints (podInfo), its requests
	// (builtin resources by lookup into podInfo.builtin, other names registered; sortedQueue reads
	// those pods' lists again) and its queue key.
	s.readPods(in.Pods)
	for _, p := range s.daemons {
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

	s.addExistingNodes(in.ExistingNodes) // existing.go
	return s
}

// newBareSolver is a solver with its options defaulted and its indexes empty: no pools, no
// targets. Solve fills it in; Placement uses it as is, to compile constraints.
func newBareSolver(in *Input) *solver {
	s := &solver{
		in:         in,
		opts:       in.Options,
		ri:         newResourceIndex(),
		reqIDs:     map[string]int32{},
		emptyID:    -1,
		compat:     map[[2]int32]compatResult{},
		pins:       map[pinKey]int32{},
		groupsByID: map[string]*topoGroup{},
		ownedAnti:  map[*corev1.Pod][]string{},
		errors:     map[*corev1.Pod]error{},
		claimTypes: map[string]*claimTypes{},
		typeIDs:    map[*NodePool]string{},
		volumes:    newVolumeIndex(in),
		consSlab:   slab[podCons]{chunk: -16},
		attSlab:    slab[attempt]{chunk: -16},
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
	s.daemons = in.DaemonSetPods
	if !s.opts.SimulateDRARequests {
		s.daemons = withoutDRA(in.DaemonSetPods)
	}
	s.wellKnown = wellKnownSet(s.opts)
	s.wellKnownFn = func(k string) bool { return s.wellKnown[k] }
	return s
}

// wellKnownSet is the set of the options' well-known labels (DefaultWellKnownLabels unless
// the options name their own).
func wellKnownSet(o Options) map[string]bool {
	wk := o.WellKnownLabels
	if wk == nil {
		wk = DefaultWellKnownLabels
	}
	set := make(map[string]bool, len(wk))
	for _, k := range wk {
		set[k] = true
	}
	return set
}

// typeNodeRequirements are the labels of a node of a pool (its requirements, base) launched
// as instance type it: what a DaemonSet pod's node selector and affinity are judged against.
func typeNodeRequirements(base Requirements, it *InstanceType) Requirements {
	return base.Intersect(it.Requirements.With(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, it.Name)))
}

func (s *solver) run() {
	queue := sortedQueue(s, s.in.Pods)
	// Create every group up front, so that a pod counted by a group is pinned to a domain of
	// that group's key whenever it lands, even if it is placed before the constrained pods.
	for _, p := range queue {
		if p.invalid == nil && p.hasGroups() {
			_, _ = s.compile(p)
		}
	}
	// Pods whose constraints depend on pods placed later (e.g. affinity to them) get another
	// pass while passes make progress.
	for len(queue) > 0 {
		var failed []*podInfo
		done := func(p *podInfo, err error) {
			if err != nil {
				s.errors[p.pod] = err
				failed = append(failed, p)
			} else if len(s.errors) > 0 {
				delete(s.errors, p.pod)
			}
		}
		for i := 0; i < len(queue); {
			p := queue[i]
			err := s.place(p)
			done(p, err)
			i++
			if err == nil && !s.oneByOne && s.runHead(p) {
				i = s.placeRun(queue, i, done)
			}
		}
		if len(failed) == len(queue) {
			break
		}
		queue = failed
	}
}

// Runs of identical pods. Sorted by requests, pods of one workload (same constraints, same
// requests) come one after another. When a pod with nothing but its requests to place (no
// constraint, no group counting it, one attempt) lands on a claim, the identical pods after it
// would each scan the same targets up to that claim again, compile the same attempt and narrow
// the claim's instance types one pod at a time. placeRun places them as a class instead: the
// claim takes as many as fit at once (one narrowing for k pods, found by bisection on k), and
// the next pod starts its scan after the claim. The targets before it rejected the identical
// pod before them, and placing a pod that no group counts changes no other target, so every pod
// lands where placing them one by one would put it.

// runHead reports whether p, just placed, can lead a run: it is placed by its requests alone.
func (s *solver) runHead(p *podInfo) bool {
	return p.shared && len(p.matched) == 0 && !s.canRelax(p) && s.lastPlaced != nil && s.lastPlaced.existing == nil
}

// sameAs reports whether q is placed exactly like the run's head p.
func (s *solver) sameAs(p, q *podInfo) bool {
	if q.podCons != p.podCons || len(q.requests) != len(p.requests) {
		return false
	}
	for r, v := range p.requests {
		if q.requests[r] != v {
			return false
		}
	}
	return len(s.matchedGroups(q)) == 0
}

// placeRun places the pods from queue[i] on that are identical to queue[i-1], just placed on
// s.lastPlaced, and returns the position of the first pod it did not place.
func (s *solver) placeRun(queue []*podInfo, i int, done func(*podInfo, error)) int {
	head := queue[i-1]
	end := i
	for end < len(queue) && s.sameAs(head, queue[end]) {
		end++
	}
	t := s.lastPlaced
	for i < end {
		k, ok := s.fillClaim(t, queue[i:end])
		if !ok {
			break // t was not judged by fit alone: the pods go the usual way
		}
		for _, q := range queue[i : i+k] {
			done(q, nil)
		}
		i += k
		if i == end {
			break
		}
		// The next pod does not fit t: it scans on from the target after t.
		q := queue[i]
		s.minStart = t.idx + 1
		err := s.place(q)
		s.minStart = 0
		done(q, err)
		i++
		if err != nil || s.lastPlaced.existing != nil {
			break
		}
		t = s.lastPlaced
	}
	return i
}

// fillClaim places on claim t as many of the identical pods as fit (in order) and returns
// how many: the largest k whose k-fold requests leave t an instance type. ok is false when
// something besides room decides (then nothing is placed).
func (s *solver) fillClaim(t *target, pods []*podInfo) (k int, ok bool) {
	q := pods[0]
	a, err := s.compile(q)
	if err != nil {
		return 0, false
	}
	defer s.settle(q)
	if t.existing != nil || a.poolErr[t.pool.idx] != nil || a.hostReq != nil || len(a.own) > 0 || len(a.inverse) > 0 ||
		len(a.keys) > 0 || len(q.ports) > 0 {
		return 0, false
	}
	m := s.merge(t, a.reqID)
	if m.err != nil || s.hasMin[m.merged] {
		return 0, false
	}
	req := q.requests
	kreq := resVec(s.vecs.take(len(req)))
	fits := func(k int) (plan, bool) {
		for r, v := range req {
			kreq[r] = v * int64(k)
		}
		its, low, ok := s.types(t, m.merged, kreq)
		return plan{reqID: m.merged, its: its, minAvail: low}, ok
	}
	best, fit := fits(len(pods))
	k = len(pods)
	if !fit {
		// fits(lo) holds (or lo = 0), fits(hi) does not.
		lo, hi := 0, len(pods)
		for hi-lo > 1 {
			mid := int(uint(lo+hi) >> 1)
			if pl, ok := fits(mid); ok {
				lo, best = mid, pl
			} else {
				hi = mid
			}
		}
		k = lo
	}
	if k == 0 {
		return 0, true
	}
	s.commit(nil, t, best)
	s.growPods(t, k)
	for _, p := range pods[:k] {
		t.used.add(p.requests)
		t.pods = append(t.pods, p.pod)
		t.infos = append(t.infos, p)
	}
	return k, true
}

// place tries the pod, relaxing one preference after each failure.
func (s *solver) place(p *podInfo) error {
	if p.invalid != nil {
		return p.invalid
	}
	err := s.placeRelaxing(p)
	s.settle(p)
	return err
}

func (s *solver) placeRelaxing(p *podInfo) error {
	for {
		a, err := s.compile(p)
		if err != nil {
			return err
		}
		// Only the last attempt's error reaches the user: earlier ones are not explained.
		err = s.placeAttempt(a, !s.canRelax(p))
		if err == nil {
			return nil
		}
		if !s.relax(p) {
			return err
		}
	}
}

// errNotPlaced is placeAttempt's unexplained failure (a relaxation follows).
var errNotPlaced = errors.New("not placed")

func (s *solver) placeAttempt(a *attempt, explain bool) error {
	start := max(s.scanStart(a), s.minStart)
	// Existing targets without room are skipped through the room index (existing.go).
	for i := s.nextExisting(a, start); i < s.numExisting; i = s.nextExisting(a, i+1) {
		if plan, ok := s.tryTarget(a, s.targets[i]); ok {
			s.commit(a, s.targets[i], plan)
			return nil
		}
	}
	for _, t := range s.targets[max(start, s.numExisting):] {
		if plan, ok := s.tryTarget(a, t); ok {
			s.commit(a, t, plan)
			return nil
		}
	}
	var reasons []poolReason
	for _, pool := range s.pools {
		t, plan, err := s.tryNewClaim(a, pool)
		if err == nil {
			t.idx = len(s.targets)
			s.targets = append(s.targets, t)
			s.commit(a, t, plan)
			return nil
		}
		if !explain {
			continue
		}
		reasons = append(reasons, poolReason{relevance(a.reqs, pool.baseReqs, pool.np.Name, s.wellKnownFn),
			fmt.Sprintf("incompatible with nodepool %s: %v", pool.np.Name, err)})
	}
	if !explain {
		return errNotPlaced
	}
	for _, u := range s.in.UnavailableNodePools {
		reasons = append(reasons, poolReason{relevance(a.reqs, poolRequirements(&u.NodePool), u.Name, s.wellKnownFn), u.Message})
	}
	if len(reasons) == 0 {
		return fmt.Errorf("no nodepool or existing node can hold the pod")
	}
	return &PodError{Reasons: orderReasons(reasons)}
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

func (s *solver) results() *Results {
	r := &Results{PodErrors: s.errors}
	// The placed pods' lists leave the scratch (growPods) for one array the caller owns.
	// The claims too are one array (and the list of them one more), not an allocation each.
	n, claims := 0, 0
	for _, t := range s.targets {
		n += len(t.pods)
		if len(t.pods) > 0 && t.existing == nil {
			claims++
		}
	}
	out := make([]*corev1.Pod, n)
	var block []NewClaim
	if claims > 0 {
		block = make([]NewClaim, claims)
		r.NewClaims = make([]*NewClaim, 0, claims)
	}
	for _, t := range s.targets {
		if len(t.pods) == 0 {
			continue
		}
		k := len(t.pods)
		copy(out, t.pods)
		t.pods, out = out[:k:k], out[k:]
		if t.existing != nil {
			r.ExistingNodes = append(r.ExistingNodes, ExistingPlacement{Node: t.existing, Pods: t.pods})
			continue
		}
		c := &block[len(r.NewClaims)]
		s.newClaim(c, t)
		r.NewClaims = append(r.NewClaims, c)
	}
	return r
}
