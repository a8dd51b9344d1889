package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

// Compiled constraints: a pod's constraints in force, interned and cached for the hot path.

// compatResult caches merge: whether a target's and a pod's requirement sets are compatible,
// and the ID of their intersection.
type compatResult struct {
	err    error
	merged int32
}

// pinKey caches pin: a requirement set narrowed to one value of a key.
type pinKey struct {
	id         int32
	key, value string
}

// uniqueKey is the key of requirement sets interned without one (internUnique): nothing
// derived from them is memoized across solves.
const uniqueKey = "\x00unique"

// intern gives equal requirement sets the same small ID, the key of every cache.
func (s *solver) intern(r Requirements) int32 {
	if len(r.reqs) == 0 && s.emptyID >= 0 {
		return s.emptyID // most pods require nothing: no key to render
	}
	b := r.appendKey(s.internBuf[:0])
	s.internBuf = b
	if id, ok := s.reqIDs[string(b)]; ok {
		return id
	}
	k := string(b)
	id := int32(len(s.reqByID))
	s.reqIDs[k] = id
	s.reqByID = append(s.reqByID, r)
	s.reqKeys = append(s.reqKeys, k)
	hm := false
	for _, x := range r.reqs {
		if x.MinValues != nil {
			hm = true
		}
	}
	s.hasMin = append(s.hasMin, hm)
	if len(r.reqs) == 0 {
		s.emptyID = id
	}
	return id
}

// merge intersects a target's requirement set with a pod's, cached per pair of IDs.
func (s *solver) merge(t *target, podID int32) compatResult {
	if t.reqID < 0 {
		s.nodeReqs(t) // an existing node's labels are compiled on first use (existing.go)
	}
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
	// A pod with topology groups keeps its attempt (recompiling after a relaxation reuses it,
	// and the up-front compile of run is kept); any other pod is compiled into the solver's
	// scratch (see settle).
	var a *attempt
	if p.hasGroups() {
		if p.ownAtt == nil {
			p.ownAtt = &s.attSlab.take(1)[0]
		}
		a = p.ownAtt
	} else {
		a = &s.scratchAtt
	}
	own := a.own[:0]
	*a = attempt{p: p, reqs: p.terms[0], own: own}
	if len(p.prefNode) > 0 {
		a.reqs = a.reqs.Intersect(p.prefNode[0])
	}
	a.reqID = s.intern(a.reqs)
	if r, ok := a.reqs.Get(LabelHostname); ok {
		hr := r // declared here so that only pods naming a hostname allocate it
		a.hostReq = &hr
	}
	if p.hasGroups() {
		groups, err := s.appendTopologyGroups(s.groupBuf[:0], p)
		s.groupBuf = groups
		if err != nil {
			return nil, err
		}
		// Whether the pod counts for its own groups: the groups counting it (all groups so far
		// tested, the pod's new ones included) say so without reading its labels again.
		matched := s.matchedGroups(p)
		if cap(a.own) < len(groups) {
			a.own = s.ownSlab.take(len(groups))[:0]
		}
		for _, g := range groups {
			a.own = append(a.own, ownGroup{g: g, self: containsGroup(matched, g)})
		}
	}
	a.poolErr = s.poolErrors(p.tols, p.preferNoScheduleTolerated)
	s.refresh(a)
	p.compiled = a
	return a, nil
}

// settle is called when a pod's placement ends: a scratch attempt is dropped (the next pod
// compiles into it). A pod that failed is compiled again when retried (relax has reset it
// anyway), so only attempts of pods with topology groups outlive their placement.
func (s *solver) settle(p *podInfo) {
	if p.compiled == &s.scratchAtt {
		p.compiled = nil
	}
}

// poolErrors is, per pool, whether pods with these tolerations are kept off it by its taints.
// Pods without tolerations (most) share one read-only slice per preferNoSchedule mode.
func (s *solver) poolErrors(tols []corev1.Toleration, preferNoScheduleTolerated bool) []error {
	shared := len(tols) == 0
	mode := 0
	if preferNoScheduleTolerated {
		mode = 1
	}
	if shared && s.noTolPoolErr[mode] != nil {
		return s.noTolPoolErr[mode]
	}
	out := make([]error, len(s.pools))
	for i, pool := range s.pools {
		out[i] = ToleratesTaints(tols, pool.np.Taints, !preferNoScheduleTolerated)
	}
	if shared {
		s.noTolPoolErr[mode] = out
	}
	return out
}

// appendTopologyGroups appends to out the groups of the pod's topology constraints in force
// (creating them on first use): topology spread, then required pod affinity and anti-affinity,
// then the preferred ones still in force. Every constraint that counts pods across nodes is one
// of these; Placement lists them through this same function.
func (s *solver) appendTopologyGroups(out []*topoGroup, p *podInfo) ([]*topoGroup, error) {
	pod := p.pod
	add := func(g *topoGroup, err error) error {
		if err != nil {
			return err
		}
		out = append(out, g)
		return nil
	}
	// The kube-scheduler's nodeAffinityPolicy looks at required node affinity and node
	// selector only (not preferences, not volumes).
	filterReqs := p.affinityTerms[0]
	for i := range p.tscs {
		if err := add(s.spreadGroup(pod, &p.tscs[i], filterReqs, pod.Spec.Tolerations)); err != nil {
			return out, err
		}
	}
	// p.affine and p.repels were read from the pod once: most pods have neither, and the pod
	// itself is no longer in cache when the queue is compiled.
	if p.affine {
		aff := pod.Spec.Affinity
		for i := range aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if err := add(s.affinityGroup(pod, &aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], kindAffinity)); err != nil {
				return out, err
			}
		}
	}
	var anti []corev1.PodAffinityTerm
	if p.repels {
		anti = repelling(pod)
	}
	for i := range anti {
		if err := add(s.affinityGroup(pod, &anti[i], kindAnti)); err != nil {
			return out, err
		}
	}
	// Preferred terms are resolved to groups once per pod: relaxation drops them one at a time
	// and recompiles, and the groups of the terms left do not change.
	if len(p.prefAff) > 0 && p.prefAffG == nil {
		gs := make([]*topoGroup, 0, len(p.prefAff))
		for i := range p.prefAff {
			g, err := s.affinityGroup(pod, &p.prefAff[i], kindAffinity)
			if err != nil {
				return append(out, gs...), err
			}
			gs = append(gs, g)
		}
		p.prefAffG = gs
	}
	out = append(out, p.prefAffG...)
	if len(p.prefAnti) > 0 && p.prefAntiG == nil {
		gs := make([]*topoGroup, 0, len(p.prefAnti))
		for i := range p.prefAnti {
			g, err := s.affinityGroup(pod, &p.prefAnti[i], kindAnti)
			if err != nil {
				return append(out, gs...), err
			}
			gs = append(gs, g)
		}
		p.prefAntiG = gs
	}
	out = append(out, p.prefAntiG...)
	return out, nil
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
	if cap(a.inverse) < len(a.counted) {
		a.inverse = s.groupSlab.take(len(a.counted))[:0]
	}
	for _, g := range a.counted {
		if g.kind == kindAnti && (len(g.owners) > 0 || len(g.hostOwners) > 0) {
			a.inverse = append(a.inverse, g)
		}
	}
}
