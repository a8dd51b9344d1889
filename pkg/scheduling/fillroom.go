package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// Filling idle room (Options.Repack, after repack). A claim whose pods cannot move is sized by
// them alone: a pod with required hostname anti-affinity opens a claim of its own, on the
// cheapest type that holds it, and a pod of 100m cpu and 4Gi memory leaves most of that type's
// cpu idle. Repack cannot use that room: it moves pods only within one pool and requirement
// set, and only pods that no hostname-keyed group counts. Yet most pods counted by such a group
// (a Deployment's pods that another Deployment's hostname spread selects) may go to any node
// where no pod of that group's own constraint sits: a node's count for the group then only
// matters to a constrained pod placed there, and the minimum over hostnames stays zero.
//
// fillRoom moves such pods (transferable) out of the claims holding them (donors) into the room
// of claims whose pods all stay (receivers), per pool:
//   - a pod moves to a receiver only when it fits in the room the receiver's type leaves, no
//     pod on the receiver owns a hostname-keyed group counting it, and the receiver's
//     requirements can take the donor's (their intersection: the pod keeps its zone and every
//     other domain its groups count it in) at no higher price;
//   - donors are emptied cheapest first, their pods largest first, each into the first receiver
//     (most idle room first) that takes it; a donor's moves are kept only when its remaining
//     pods fit a cheaper type (or none remain), so every kept move lowers the fleet's $/h and
//     none raises a receiver's.
//
// Receivers keep their type; donors are re-priced over their requirement set's types (within
// the limit reservation they held). Every pod keeps every domain but its hostname, and the
// hostname counts of the groups counting it follow it.

// fillClaim is a claim's planned state while fillRoom decides.
type fillClaim struct {
	t        *target
	reqID    int32 // planned requirement set
	ci       int   // the type the claim is priced at (position in pool.its)
	price    float64
	used     resVec // planned requests
	room     resVec // pool.alloc[ci] - used
	owned    []*topoGroup
	filtered bool       // a group counting one of its pods has a node filter: its requirements stay
	took     bool       // receivers: some pod moves in
	movers   []*podInfo // donors: the transferable pods
	dead     bool       // receivers: room below the smallest mover's request
	stamp    int        // the donor (1-based) whose plan last touched it
	order    float64    // receivers: idle room, in $/h
}

// transferable reports whether the pod may leave its claim for another claim of its pool that
// keeps it in all its non-hostname domains: it is not held to its host (heldToHost), and no
// group counting it has a node filter or is a hostname affinity (whose owners may need it where
// it is).
func (s *solver) transferable(p *podInfo) bool {
	if heldToHost(p) {
		return false
	}
	for _, g := range s.matchedGroups(p) {
		if g.filter != nil || (g.hostname && g.kind == kindAffinity) {
			return false
		}
	}
	return true
}

func (s *solver) fillRoom() {
	if !s.opts.Repack || len(s.targets)-s.numExisting < 2 {
		return
	}
	for _, pool := range s.pools {
		s.fillPool(pool)
	}
}

// fillable reports whether claim t of the pool takes part in fillRoom: it holds pods, and
// its types were not chosen for minValues (which the fill does not keep).
func (s *solver) fillable(t *target, pool *poolState) bool {
	return t.pool == pool && len(t.infos) > 0 && !t.relaxed && !s.hasMin[t.reqID]
}

func (s *solver) fillPool(pool *poolState) {
	// Nothing to fill without both a claim whose pods all stay and one with a pod that may
	// move: most solves (unconstrained pods: donors only; one pod per claim: receivers only)
	// stop here, after reading a pod or so per claim.
	receiver, donor := false, false
	for _, t := range s.targets[s.numExisting:] {
		if !s.fillable(t, pool) {
			continue
		}
		if slices.ContainsFunc(t.infos, s.transferable) {
			donor = true
		} else {
			receiver = true
		}
		if receiver && donor {
			break
		}
	}
	if !receiver || !donor {
		return
	}
	nres := len(s.ri.names)
	var donors, receivers []*fillClaim
	minReq := make(resVec, nres)
	for r := range minReq {
		minReq[r] = math.MaxInt64
	}
	// The claims' states in one array, their movers in another (sliced once both are read),
	// and their vectors from the solve's slab.
	fcs := make([]fillClaim, 0, len(s.targets)-s.numExisting)
	var movBuf []*podInfo
	var movAt []int
	for _, t := range s.targets[s.numExisting:] {
		if !s.fillable(t, pool) {
			continue
		}
		ports := false
		at := len(movBuf)
		for _, p := range t.infos {
			if len(p.ports) > 0 {
				ports = true
			}
			if s.transferable(p) {
				movBuf = append(movBuf, p)
				for r, v := range p.requests {
					minReq[r] = min(minReq[r], v)
				}
			}
		}
		if len(movBuf) > at && ports {
			movBuf = movBuf[:at]
			continue // a donor's types are chosen anew, and daemons' ports are not
		}
		ci, price, ok := cheapestOf(s.ordered(pool, t.reqID), t.its)
		if !ok {
			movBuf = movBuf[:at]
			continue
		}
		used := resVec(s.vecs.take(nres))
		copy(used, t.used)
		fcs = append(fcs, fillClaim{t: t, reqID: t.reqID, ci: ci, price: price, used: used})
		movAt = append(movAt, at)
	}
	for i := range fcs {
		fc := &fcs[i]
		end := len(movBuf)
		if i+1 < len(fcs) {
			end = movAt[i+1]
		}
		if end > movAt[i] {
			fc.movers = movBuf[movAt[i]:end:end]
			s.sortMovers(fc.movers)
			donors = append(donors, fc)
			continue
		}
		t := fc.t
		ci, price := fc.ci, fc.price
		fc.room = resVec(s.vecs.take(nres))
		copy(fc.room, pool.alloc[ci])
		fc.room.sub(fc.used)
		for _, p := range t.infos {
			if p.ownAtt != nil {
				for _, og := range p.ownAtt.own {
					if og.g.hostname && !slices.Contains(fc.owned, og.g) {
						fc.owned = append(fc.owned, og.g)
					}
				}
			}
			for _, g := range s.matchedGroups(p) {
				if g.filter != nil {
					fc.filtered = true
				}
			}
		}
		// Idle room in $/h: the price times the share of the type the pods leave unrequested,
		// averaged over the resources the type has.
		share, n := 0.0, 0
		for r, a := range pool.alloc[ci] {
			if a > 0 {
				share += float64(fc.room[r]) / float64(a)
				n++
			}
		}
		if n > 0 {
			fc.order = price * share / float64(n)
		}
		receivers = append(receivers, fc)
	}
	if len(donors) == 0 || len(receivers) == 0 {
		return
	}
	dead := func(fc *fillClaim) bool {
		for r, m := range minReq {
			if m > 0 && m != math.MaxInt64 && fc.room[r] < m {
				return true
			}
		}
		return false
	}
	receivers = slices.DeleteFunc(receivers, dead)
	slices.SortStableFunc(receivers, func(a, b *fillClaim) int { return cmp.Compare(b.order, a.order) })
	slices.SortStableFunc(donors, func(a, b *fillClaim) int { return cmp.Compare(a.price, b.price) })

	// The intersection of a receiver's and a donor's requirement sets, by their IDs.
	type pair struct{ a, b int32 }
	joined := map[pair]int32{}
	join := func(a, b int32) (int32, bool) {
		if a == b {
			return a, true
		}
		if id, ok := joined[pair{a, b}]; ok {
			return id, id >= 0
		}
		rs := s.reqByID[a].Intersect(s.reqByID[b])
		id := int32(-1)
		ok := true
		for _, r := range rs.reqs {
			if r.IsEmpty() {
				ok = false
				break
			}
		}
		if ok {
			id = s.intern(rs)
		}
		joined[pair{a, b}] = id
		return id, ok
	}
	type cand struct {
		fc    *fillClaim
		reqID int32
	}
	type saved struct {
		fc    *fillClaim
		reqID int32
		ci    int
		room  resVec
	}
	var cands []cand
	type seenJoin struct {
		from, id int32
		ok       bool
	}
	var seen []seenJoin
	died := 0
	var touched []saved
	var moves []fillMove
	need := make(resVec, nres)
	var changed []*fillClaim
	for di, a := range donors {
		stamp := di + 1
		// The receivers that can take the donor's requirements.
		cands = cands[:0]
		seen = seen[:0] // the joins of this donor, by receiver requirement set (a few)
		for _, r := range receivers {
			if r.dead {
				continue
			}
			var id int32
			var ok bool
			if k := slices.IndexFunc(seen, func(x seenJoin) bool { return x.from == r.reqID }); k >= 0 {
				id, ok = seen[k].id, seen[k].ok
			} else {
				id, ok = join(r.reqID, a.reqID)
				if len(seen) < 8 {
					seen = append(seen, seenJoin{r.reqID, id, ok})
				}
			}
			if !ok || (id != r.reqID && r.filtered) {
				continue
			}
			cands = append(cands, cand{r, id})
		}
		died = 0
		if len(cands) == 0 {
			continue
		}
		touched = touched[:0]
		mark := len(moves)
		// The movers in runs of equal requests (the placement queue's order). Within a run,
		// the receivers before ptr have no room for it (room only shrinks while a donor is
		// planned): each pod's scan starts there.
		// The movers come in runs of equal requests and equal hostname groups counting them
		// (sorted so when the donor was read). Whether a receiver takes a pod depends on
		// nothing else, and a receiver that refuses one keeps refusing the run while the
		// donor is planned (room only shrinks, and no pod moving in owns a hostname group):
		// each pod's scan starts where the previous one's ended, and a run that finds no
		// receiver ends.
		for i := 0; i < len(a.movers); {
			req := a.movers[i].requests
			end := i + 1
			for end < len(a.movers) && slices.Equal(a.movers[end].requests, req) && s.sameHostGroups(a.movers[end], a.movers[i]) {
				end++
			}
			if died > len(cands)/4 {
				cands = slices.DeleteFunc(cands, func(c cand) bool { return c.fc.dead })
				died = 0
			}
			ptr := 0
			for _, p := range a.movers[i:end] {
				for ; ptr < len(cands); ptr++ {
					c := &cands[ptr]
					r := c.fc
					if r.dead || !req.fitsIn(r.room) || !s.fillAllows(p, r) {
						continue
					}
					// The receiver's type under its new requirements: the cheapest that holds
					// its pods and this one, at no higher price.
					id, ti := r.reqID, r.ci
					if c.reqID != r.reqID {
						id = c.reqID
						copy(need, r.used)
						need.add(req)
						found := false
						for _, pr := range s.ordered(pool, id) {
							if pr.price > r.price+1e-9 {
								break
							}
							if r.t.its.has(pr.i) && need.fitsIn(pool.alloc[pr.i]) {
								ti, found = pr.i, true
								break
							}
						}
						if !found {
							continue
						}
					}
					if r.stamp != stamp {
						r.stamp = stamp
						room := resVec(s.vecs.take(nres))
						copy(room, r.room)
						touched = append(touched, saved{fc: r, reqID: r.reqID, ci: r.ci, room: room})
					}
					if ti != r.ci || id != r.reqID {
						r.reqID, r.ci = id, ti
						copy(r.room, pool.alloc[ti])
						r.room.sub(r.used)
					}
					r.used.add(req)
					r.room.sub(req)
					moves = append(moves, fillMove{p: p, from: a, to: r})
					if r.dead = dead(r); r.dead {
						died++
					}
					break
				}
				if ptr == len(cands) {
					break // no receiver takes this run
				}
			}
			i = end
		}
		if len(moves) == mark {
			continue
		}
		// Kept only when the donor's remaining pods fit a cheaper type (or none remain).
		left := resVec(s.vecs.take(nres))
		copy(left, a.used)
		for _, m := range moves[mark:] {
			left.sub(m.p.requests)
		}
		if newPrice, ok := s.donorPrice(pool, a, left); ok && newPrice < a.price-1e-9 {
			changed = append(changed, a) // applyFill re-types it from its remaining pods
			continue
		}
		for _, m := range moves[mark:] {
			m.to.used.sub(m.p.requests)
		}
		moves = moves[:mark]
		for _, x := range touched {
			r := x.fc
			r.reqID, r.ci, r.room = x.reqID, x.ci, x.room
			r.dead = dead(r)
		}
	}
	if len(changed) == 0 {
		return
	}
	s.applyFill(pool, moves, changed)
}

// sortMovers orders a donor's movers largest first (cpu, then memory, then the other
// resources), pods of equal requests by the hostname groups counting them (hostGroupKey,
// read once per pod).
func (s *solver) sortMovers(movers []*podInfo) {
	type keyed struct {
		p *podInfo
		k int
	}
	ks := make([]keyed, len(movers))
	for i, p := range movers {
		ks[i] = keyed{p, s.hostGroupKey(p)}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		p, q := a.p, b.p
		if c := cmp.Compare(q.requests[resCPU], p.requests[resCPU]); c != 0 {
			return c
		}
		if c := cmp.Compare(q.requests[resMemory], p.requests[resMemory]); c != 0 {
			return c
		}
		if c := slices.Compare(q.requests, p.requests); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	for i := range ks {
		movers[i] = ks[i].p
	}
}

// hostGroupKey is the smallest ID of a hostname-keyed group counting p, -1 for none: with
// sameHostGroups, what puts pods counted by the same groups together.
func (s *solver) hostGroupKey(p *podInfo) int {
	k := -1
	for _, g := range s.matchedGroups(p) {
		if g.hostname && (k < 0 || g.id < k) {
			k = g.id
		}
	}
	return k
}

// sameHostGroups reports whether the same hostname-keyed groups count p and q.
func (s *solver) sameHostGroups(p, q *podInfo) bool {
	n := 0
	for _, g := range s.matchedGroups(p) {
		if g.hostname {
			n++
			if !containsGroup(s.matchedGroups(q), g) {
				return false
			}
		}
	}
	for _, g := range s.matchedGroups(q) {
		if g.hostname {
			n--
		}
	}
	return n == 0
}

// fillAllows reports whether no pod on the receiver owns a hostname-keyed group counting p.
func (s *solver) fillAllows(p *podInfo, r *fillClaim) bool {
	if len(r.owned) == 0 {
		return true
	}
	for _, g := range s.matchedGroups(p) {
		if g.hostname && slices.Contains(r.owned, g) {
			return false
		}
	}
	return true
}

// donorPrice is the price of the cheapest type of the donor's requirement set that holds left
// (within the limit reservation the claim holds, in a pool with limits); 0 when nothing is
// left.
func (s *solver) donorPrice(pool *poolState, a *fillClaim, left resVec) (float64, bool) {
	empty := true
	for _, v := range left {
		if v != 0 {
			empty = false
			break
		}
	}
	if empty {
		return 0, true
	}
	for _, pr := range s.ordered(pool, a.reqID) {
		if left.fitsIn(pool.alloc[pr.i]) && s.withinReservation(pool, a.t, pr.i) {
			return pr.price, true
		}
	}
	return 0, false
}

// withinReservation reports whether type i's capacity is within what claim t reserves of its
// pool's limits (always, in a pool without limits).
func (s *solver) withinReservation(pool *poolState, t *target, i int) bool {
	if pool.limited == nil || t.reserved == nil {
		return true
	}
	for r, lim := range pool.limited {
		if lim && pool.capacity[i][r] > t.reserved[r] {
			return false
		}
	}
	return true
}

// fillMove is a planned move of pod p from a donor to a receiver.
type fillMove struct {
	p        *podInfo
	from, to *fillClaim
}

// applyFill carries out the kept moves: receivers take their pods (and narrowed requirements
// and types), donors lose them and take the types that hold what remains.
func (s *solver) applyFill(pool *poolState, moves []fillMove, donors []*fillClaim) {
	nres := len(s.ri.names)
	if pool.fit == nil {
		pool.fit = newFitTable(pool.alloc, nres, &s.bits, &s.vecs)
	}
	zero := resVec(s.vecs.take(nres))
	for _, m := range moves {
		r, t := m.to, m.to.t
		if !r.took {
			r.took = true
			its := bitset(s.bits.take(len(t.its)))
			copy(its, t.its)
			if r.reqID != t.reqID {
				compat := s.compatible(pool, r.reqID)
				for w := range its {
					its[w] &= compat[w]
				}
			}
			low := resVec(s.vecs.take(nres))
			narrowTypes(pool.fit, pool.alloc, its, zero, r.used, low)
			s.commit(nil, t, plan{reqID: r.reqID, its: its, minAvail: low})
		}
		p := m.p
		p.filled = true
		s.growPods(t, 1)
		t.used.add(p.requests)
		t.pods = append(t.pods, p.pod)
		t.infos = append(t.infos, p)
		from := m.from.t
		for _, g := range s.matchedGroups(p) {
			if g.hostname {
				if from.idx < len(g.hostCounts) && g.hostCounts[from.idx] > 0 {
					g.hostCounts[from.idx]--
				}
				g.hostCounts = s.incIdx(g.hostCounts, t.idx)
			}
		}
	}
	for _, a := range donors {
		t := a.t
		t.infos = slices.DeleteFunc(t.infos, func(p *podInfo) bool { return p.filled })
		t.pods = t.pods[:0]
		clear(t.used)
		for _, p := range t.infos {
			t.pods = append(t.pods, p.pod)
			t.used.add(p.requests)
		}
		if len(t.infos) == 0 {
			if t.reserved != nil {
				pool.remaining.add(t.reserved)
				t.reserved = nil
			}
			continue
		}
		compat := s.compatible(pool, t.reqID)
		its := bitset(s.bits.take(len(compat)))
		copy(its, compat)
		if pool.limited != nil && t.reserved != nil {
			its.forEach(func(i int) {
				if !s.withinReservation(pool, t, i) {
					its.clear(i)
				}
			})
		}
		low := resVec(s.vecs.take(nres))
		narrowTypes(pool.fit, pool.alloc, its, zero, t.used, low)
		s.commit(nil, t, plan{reqID: t.reqID, its: its, minAvail: low})
	}
}
