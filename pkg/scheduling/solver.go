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
	emptyID int32 // ID of the empty requirement set, -1 until interned
	reqByID []Requirements
	hasMin  []bool
	compat  map[[2]int32]compatResult
	pins    map[pinKey]int32

	groups     []*topoGroup
	groupsByID map[string]*topoGroup
	groupIdx   groupIndex
	groupBuf   []*topoGroup // scratch for compile
	ownedAnti  map[*corev1.Pod][]string
	bound      *boundIndex // bound pods of existing targets by label (see existing.go)
	room       *roomIndex  // free capacity of existing targets (see existing.go)
	views      []*setView  // the existing-node sets the targets come from (existingset.go)
	// shapeCompat: (shape, pod) requirement-set IDs -> compatible (existingAdmits).
	shapeCompat map[[2]int32]bool
	shapes      []solverShape // existing nodes' shapes met in this solve (existingset.go)
	shapeMasks  map[*attempt]shapeMaskEntry
	filterIDs   map[*nodeFilter]int32 // spread node filters' requirement-set IDs
	admitMisses int                   // existing nodes that refused a pod for labels or taints

	noTolPoolErr        [2][]error // poolErrors for pods without tolerations, by preferNoSchedule mode
	anyPreferNoSchedule bool
	errors              map[*corev1.Pod]error
	claimTypes          map[string]*claimTypes
	typeIDs             map[*NodePool]string
	keyBuf              []byte            // scratch for map keys built per claim or pod
	internBuf           []byte            // scratch for intern's keys
	podBuiltin          []builtinRequests // by input position
	podInfos            []podInfo         // by input position
	queueKeys           []queueKey        // by input position until sortedQueue sorts them
	bits                slab[uint64]      // claims' instance-type bitsets (narrow.go)
	vecs                slab[int64]       // claims' allocatable bounds
}

// Solve places the input's pods. It is pure and deterministic: the same input gives the same
// result, and the input is not modified.
func Solve(in *Input) *Results {
	s := newSolver(in)
	s.run()
	return s.results()
}

func newSolver(in *Input) *solver {
	s := newBareSolver(in)
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
	// Every pod is read here, once, in input order: its constraints (podInfo), its requests
	// (builtin resources by lookup into podBuiltin, other names registered; sortedQueue reads
	// those pods' lists again) and its queue key.
	s.readPods(in.Pods)
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
	return s
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
		for _, p := range queue {
			if err := s.place(p); err != nil {
				s.errors[p.pod] = err
				failed = append(failed, p)
			} else if len(s.errors) > 0 {
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
	start := s.scanStart(a)
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
