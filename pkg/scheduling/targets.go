package scheduling

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"
)

// Targets: the places a pod can go (existing nodes and claims opened in this solve) and what
// trying and committing a pod there involves.

// target is somewhere a pod can go: an existing (or in-flight) node, or a claim this solve
// creates. Existing nodes have fixed labels; claims have requirements that narrow as pods join
// and a set of instance types still able to hold everything on them.
type target struct {
	idx      int
	hostname string
	existing *ExistingNode
	pool     *poolState
	view     *setView      // existing: the set it was read from (existingset.go)
	prep     *preparedNode // existing: what the set read

	reqs   Requirements
	reqID  int32
	taints []corev1.Taint

	used  resVec // requests of pods on it (existing: bound pods too)
	avail resVec // existing: allocatable; claims: componentwise max of candidates' allocatable
	its   bitset // claims: candidate instance types (positions in pool.its)
	// minAvail (claims) is the componentwise minimum of the candidates' allocatable, computed
	// lazily by types and reset whenever its changes.
	minAvail resVec

	reserved resVec // claims: limit reservation (max capacity of candidates)

	ports   []hostPort
	bound   []*corev1.Pod
	pods    []*corev1.Pod // placed by this solve
	infos   []*podInfo    // pods[i]'s podInfo
	relaxed bool          // minValues relaxed (BestEffort)
}

// growPods makes room for k more pods in t.pods and t.infos. While solving, the lists grow in
// the solve's scratch (the arrays they outgrow are not garbage); results copies the pods out in
// one allocation.
func (s *solver) growPods(t *target, k int) {
	if len(t.pods)+k <= cap(t.pods) && len(t.infos)+k <= cap(t.infos) {
		return
	}
	c := max(8, 2*cap(t.pods), len(t.pods)+k)
	grown := s.podPtrs.take(c)[:len(t.pods)]
	copy(grown, t.pods)
	t.pods = grown
	infos := s.infoPtrs.take(c)[:len(t.infos)]
	copy(infos, t.infos)
	t.infos = infos
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

// plan is the state a claim moves to when a pod joins it.
type plan struct {
	reqID int32
	its   bitset
	// minAvail is the componentwise minimum allocatable of its, when types computed it.
	minAvail resVec
}

// keepsMax reports whether narrowing a set of instance types from old to new leaves max (the
// componentwise maximum of vals over old, restricted to the resources in only when non-nil)
// unchanged: new is a subset and every type dropped is strictly below the maximum. Claims lose
// their small types as they fill, so the maximum rarely needs recomputing.
func keepsMax(vals []resVec, old, new bitset, max resVec, only []bool) bool {
	if max == nil || len(old) != len(new) {
		return false
	}
	for wi := range old {
		if new[wi]&^old[wi] != 0 {
			return false
		}
		for w := old[wi] &^ new[wi]; w != 0; w &= w - 1 {
			v := vals[wi*64+bits.TrailingZeros64(w)]
			for r, x := range v {
				// A dropped zero never was the maximum of a non-empty set of non-negative values.
				if (only == nil || only[r]) && x >= max[r] && (x != 0 || max[r] != 0) {
					return false
				}
			}
		}
	}
	return true
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
		// Taints and labels, per shape of node (existingset.go).
		if !s.existingAdmits(a, t) {
			return plan{}, false
		}
	}
	merged := int32(-1) // an existing node keeps its labels: nothing to merge
	if t.existing == nil {
		m := s.merge(t, a.reqID)
		if m.err != nil {
			return plan{}, false
		}
		merged = m.merged
	}
	if len(p.ports) > 0 {
		if _, c := portsConflict(t.ports, p.ports); c {
			return plan{}, false
		}
	}
	if t.existing == nil {
		pl, err := s.claimTopologyAndTypes(a, t, merged)
		return pl, err == nil
	}
	pl, err := s.topologyAndTypes(a, t, merged)
	return pl, err == nil
}

// commit applies a successful attempt (a nil attempt only updates the claim's state).
func (s *solver) commit(a *attempt, t *target, pl plan) {
	if t.existing == nil && pl.its != nil && equalBits(pl.its, t.its) && (t.pool.limited == nil || t.reserved != nil) {
		t.reqID = pl.reqID
		t.reqs = s.reqByID[pl.reqID]
	} else if t.existing == nil {
		t.reqID = pl.reqID
		t.reqs = s.reqByID[pl.reqID]
		old := t.its
		t.its = pl.its
		t.minAvail = pl.minAvail
		// A claim's vectors die with the solve: they come from its scratch.
		if !keepsMax(t.pool.alloc, old, t.its, t.avail, nil) {
			t.avail = s.maxAllocInto(resVec(s.vecs.take(len(s.ri.names))), t.pool, t.its)
		}
		if t.pool.limited != nil && (t.reserved == nil || !keepsMax(t.pool.capacity, old, t.its, t.reserved, t.pool.limited)) {
			res := resVec(s.vecs.take(len(s.ri.names)))
			// A claim's first commit narrows the pool's base types: start from their maximum.
			if t.reserved == nil && t.pool.maxCapacity != nil && len(old) > 0 && &old[0] == &s.compatible(t.pool, t.pool.baseID)[0] &&
				keepsMax(t.pool.capacity, old, t.its, t.pool.maxCapacity, t.pool.limited) {
				for r, lim := range t.pool.limited {
					if lim {
						res[r] = t.pool.maxCapacity[r]
					}
				}
			} else {
				t.pool.reservation(res, t.its)
			}
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
	s.lastPlaced = t
	t.used.add(p.requests)
	s.roomChanged(t)
	t.ports = append(t.ports, p.ports...)
	s.growPods(t, 1)
	t.pods = append(t.pods, p.pod)
	t.infos = append(t.infos, p)
	// matchedGroups is complete (every group so far tested): exactly these groups count the pod.
	var owned []string
	if p.repels {
		// Kept in the podInfo: the solver's map by pod is for pods it knows no podInfo of.
		if !p.ownedRead {
			p.owned, p.ownedRead = s.ownedOf(a), true
		}
		owned = p.owned
	}
	matched := s.matchedGroups(p)
	for _, g := range matched {
		s.record(g, p.pod, t, true, owned)
	}
	for _, id := range owned {
		// Owner counts of groups the pod matches were recorded above; groups it owns but does
		// not match are recorded here.
		if g, ok := s.groupsByID[id]; ok && !containsGroup(matched, g) {
			s.record(g, p.pod, t, false, owned)
		}
	}
}

// containsGroup reports whether g is in gs (a pod's matched groups: a handful).
func containsGroup(gs []*topoGroup, g *topoGroup) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// reservation raises res, per limited resource, to the largest capacity among the pool's types
// in its (what a claim with those candidates holds against the pool's limits) and returns it.
func (p *poolState) reservation(res resVec, its bitset) resVec {
	its.forEach(func(i int) {
		for r, v := range p.capacity[i] {
			if p.limited[r] && v > res[r] {
				res[r] = v
			}
		}
	})
	return res
}
