package scheduling

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Repacking (Options.Repack). The placement loop opens a claim for the first pod that fits no
// other target and lets it grow with the pods that follow, up to the largest type that holds
// them; its price is then the cheapest type still big enough. So the sizes and families of a
// fleet are whatever the arrival order makes of them: on a real catalog, three claims grown to
// the largest (and dearest per cpu) family where a mix of cheaper families would do.
//
// repack revisits, after placement, the claims of one NodePool and requirement set (pinned
// domains included) whose pods may move: no hostname-keyed group owns or counts them, they
// bind no host port and require no hostname (movable). A claim may also hold pods that stay;
// it is then refilled around them. Per such class it
//
//  1. solves the covering linear program over the class's instance types (coverlp.go) for the
//     duals: the $/h that one unit of cpu, memory, pods... costs at the optimum, with size
//     cuts (the pods requesting at least v of a resource covered by the types with at least
//     v of it) so that types too small for the pods do not set those prices;
//  2. values each moving pod at those rates, and each type at its allocatable at those rates
//     over its price (no type exceeds 1: the best ones are worth their price); the candidate
//     types are those within repackWorth of the best that no other candidate worth as much
//     contains;
//  3. refills the claims with pods that stay, then opens nodes one at a time: each candidate is
//     filled, balanced across resources (fill), and the node takes the largest type whose
//     fill is worth within repackSlack of the best per $;
//  4. prices each node at the cheapest type that holds its pods.
//
// The new claims replace the old ones only when they save at least repackMinSaving and fit
// the pool's limits; otherwise the class is left as placed. The result is deterministic: every
// order breaks ties by price and position. Pods of equal requests are handled as a group
// (consecutive on the claims, as the placement loop places them), so the cost grows with the
// number of distinct requests and nodes rather than pods.

// repackSlack: a fill whose value per $ is within this fraction of the best one's may be
// chosen for being larger. Without it the search favours the small types that happen to fit a
// few pods exactly and launches many small nodes for a saving of a fraction of a percent.
const repackSlack = 0.01

// repackMinSaving: the new packing replaces the claims as placed only when it saves at least
// this fraction of their price. Below it, the fleet the placement loop chose (often fewer,
// larger nodes) is kept.
const repackMinSaving = 0.02

// repackStep: a fill takes pods for the row it has used least until that row is this far
// (a fraction of the node) past the next least used one.
const repackStep = 0.02

// repackWorth: the types considered for a node are those worth, at the duals, at least this
// fraction below the best type's worth. Types far below cannot fill a node as well; a few
// percent below they still help where prices vary by zone and capacity type (spot).
const repackWorth = 0.10

// repackGroup is consecutive moving pods of a class with equal requests, with their value
// at the duals; pods[:next] are taken.
type repackGroup struct {
	req  resVec
	val  float64
	pods []*podInfo
	from int // position of the first in the class's list of moving pods
	next int
}

// repackScratch is memory repack reuses from solve to solve (it lives in the pooled scratch):
// in a young process every fresh page is a fault, and a repack of thousands of pods would
// otherwise touch tens of kilobytes anew each solve.
type repackScratch struct {
	floats []float64
	cols   [][]float64
	infos  []*podInfo
}

// floatsFor returns n zeroed floats, and infosFor n pod slots, from the scratch when there is
// one.
func (s *solver) floatsFor(n int) []float64 {
	if s.rs == nil {
		return make([]float64, n)
	}
	s.rs.floats = sized(s.rs.floats, n)
	clear(s.rs.floats)
	return s.rs.floats
}

func (s *solver) colsFor(n int) [][]float64 {
	if s.rs == nil {
		return make([][]float64, n)
	}
	s.rs.cols = sized(s.rs.cols, n)
	return s.rs.cols
}

func (s *solver) infosFor(n int) []*podInfo {
	if s.rs == nil {
		return make([]*podInfo, n)
	}
	s.rs.infos = sized(s.rs.infos, n)
	return s.rs.infos
}

// repackClass is the claims of one pool and requirement set that repack may change: each claim
// keeps its pods that do not move and may take any of the class's pods that do.
type repackClass struct {
	pool    *poolState
	reqID   int32
	claims  []*target
	movable bool // some pod of the claims moves
}

// podMoves caches movable's verdict in the podInfo.
const (
	moveUnknown = iota
	moveYes
	moveNo
)

func (s *solver) moves(p *podInfo) bool {
	if p.moves == moveUnknown {
		p.moves = moveNo
		if s.movable(p) {
			p.moves = moveYes
		}
	}
	return p.moves == moveYes
}

func (s *solver) repack() {
	if !s.opts.Repack || len(s.targets) == s.numExisting {
		return
	}
	var classes []*repackClass
	var byKey map[[2]int32]*repackClass
	for _, t := range s.targets[s.numExisting:] {
		if len(t.pods) == 0 || t.relaxed || s.hasMin[t.reqID] {
			continue
		}
		// Claims whose staying pods bind host ports keep their types for more than room (the
		// daemons' ports): they are left as placed.
		ok, movable := true, false
		for _, p := range t.infos {
			if s.moves(p) {
				movable = true
			} else if len(p.ports) > 0 {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if byKey == nil {
			byKey = map[[2]int32]*repackClass{}
		}
		key := [2]int32{int32(t.pool.idx), t.reqID}
		c := byKey[key]
		if c == nil {
			c = &repackClass{pool: t.pool, reqID: t.reqID}
			byKey[key] = c
			classes = append(classes, c)
		}
		c.claims = append(c.claims, t)
		c.movable = c.movable || movable
	}
	for _, c := range classes {
		if c.movable {
			s.repackClass(c)
		}
	}
}

// movable reports whether the pod may go to any claim of its pool and requirement set. A
// claim's requirements include the domains pinned for the topology groups of its pods (zone,
// capacity type, any label), so a pod moved between claims of one requirement set stays in its
// domains and no count of a group on those keys changes. Hostname-keyed groups count per node:
// a pod held to its host (heldToHost) or that such a group counts stays where it was placed.
func (s *solver) movable(p *podInfo) bool {
	if heldToHost(p) {
		return false
	}
	for _, g := range s.matchedGroups(p) {
		if g.hostname {
			return false
		}
	}
	return true
}

// heldToHost reports whether where the pod goes depends on its node itself: it is invalid,
// binds host ports, requires a hostname, or owns a hostname-keyed group (spread, affinity or
// anti-affinity on the hostname, required or preferred).
func heldToHost(p *podInfo) bool {
	c := p.podCons
	if p.invalid != nil || len(c.ports) > 0 {
		return true
	}
	if len(c.terms) > 0 {
		if _, ok := c.terms[0].Get(LabelHostname); ok {
			return true
		}
	}
	for _, tsc := range c.tscs {
		if tsc.TopologyKey == LabelHostname {
			return true
		}
	}
	if hostnameTerm(c.prefAff) || hostnameTerm(c.prefAnti) {
		return true
	}
	if c.repels || c.affine {
		if a := p.pod.Spec.Affinity; a != nil {
			if a.PodAffinity != nil && hostnameTerm(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) {
				return true
			}
			if a.PodAntiAffinity != nil && hostnameTerm(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) {
				return true
			}
		}
	}
	return false
}

// hostnameTerm reports whether one of the terms is keyed on the hostname.
func hostnameTerm(terms []corev1.PodAffinityTerm) bool {
	for _, t := range terms {
		if t.TopologyKey == LabelHostname {
			return true
		}
	}
	return false
}

// repackNode is a node of a class's new packing: its pods (those that stay, then those that
// move) and their sum.
type repackNode struct {
	fixed, pods []*podInfo
	sum         resVec
}

func (s *solver) repackClass(c *repackClass) {
	pool := c.pool
	list := s.ordered(pool, c.reqID)
	if len(list) == 0 {
		return
	}
	nres := len(s.ri.names)
	cheapest := func(sum resVec) (float64, bool) {
		for _, pr := range list {
			if sum.fitsIn(pool.alloc[pr.i]) {
				return pr.price, true
			}
		}
		return 0, false
	}
	// The old claims' price, the pods that move, and what stays on each claim.
	oldPrice := 0.0
	moving := 0
	demand := make(resVec, nres)
	fixed := make([][]*podInfo, len(c.claims))
	fixedSum := make([]resVec, len(c.claims))
	for ci, t := range c.claims {
		_, price, ok := cheapestOf(list, t.its)
		if !ok {
			return
		}
		oldPrice += price
		for _, p := range t.infos {
			demand.add(p.requests)
			if p.moves == moveYes {
				moving++
				continue
			}
			if fixedSum[ci] == nil {
				fixedSum[ci] = make(resVec, nres)
			}
			fixed[ci] = append(fixed[ci], p)
			fixedSum[ci].add(p.requests)
		}
	}
	// The covering program over the class's types, rows scaled by the demand.
	var rows []int
	for r, d := range demand {
		if d > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	nr := len(rows)
	// The program's rows: one per resource, then the size cuts (a pod sits on a type that
	// holds each of its requests, so the pods requesting at least v of resource s are covered
	// by the types with at least v of s). Without the cuts the program buys cpu on types too
	// small for any pod and memory on others, and its prices make such types look best.
	lpRows := make([]repackRow, 0, nr)
	for _, r := range rows {
		lpRows = append(lpRows, repackRow{r: r, s: -1, d: demand[r]})
	}
	nl := len(list)
	var lp *coverLP
	var worths []float64
	// build lays out the program over lpRows in one array: its columns, prices and right-hand
	// side, and the types' worths.
	build := func() {
		nlp := len(lpRows)
		floats := s.floatsFor(nlp*nl + 2*nl + nlp)
		var flat, prices []float64
		flat, prices, worths = floats[:nlp*nl:nlp*nl], floats[nlp*nl:nlp*nl+nl:nlp*nl+nl], floats[nlp*nl+nl:nlp*nl+2*nl:nlp*nl+2*nl]
		lp = &coverLP{b: floats[nlp*nl+2*nl:], c: prices, cols: s.colsFor(nl)}
		for k := range lpRows {
			lp.b[k] = 1
		}
		for j, pr := range list {
			col := flat[j*nlp : (j+1)*nlp : (j+1)*nlp]
			a := pool.alloc[pr.i]
			for k, lr := range lpRows {
				if lr.s < 0 || a[lr.s] >= lr.v {
					col[k] = max(0, float64(a[lr.r])/float64(lr.d))
				}
			}
			lp.cols[j], lp.c[j] = col, pr.price
		}
	}
	build()
	x, y, opt, ok := lp.solve()
	// The size cuts are needed only when the optimum buys a type too small for the largest
	// request of some resource: otherwise it meets every cut, and its duals (zero on the cuts)
	// are the cut program's too.
	if ok && s.repackShort(pool, list, c, rows, x) {
		lpRows = s.appendSizeCuts(lpRows, pool, list, c, rows, demand)
		build()
		_, y, opt, ok = lp.solve()
	}
	nlp := len(lpRows)
	if !ok || oldPrice <= opt*(1+1e-9) {
		return // nothing to gain: the class is placed at its floor
	}
	// The moving pods, in groups of equal requests (consecutive on the claims: the placement
	// loop places them in order of requests), most valuable group first (value: the requests
	// at the duals; ties keep the claims' order).
	rate := make([]float64, nlp)
	for k, lr := range lpRows {
		rate[k] = y[k] / float64(lr.d)
	}
	valueOf := func(req resVec) float64 {
		v := 0.0
		for k, lr := range lpRows {
			if lr.s < 0 || req[lr.s] >= lr.v {
				v += rate[k] * float64(req[lr.r])
			}
		}
		return v
	}
	infos := s.infosFor(2 * moving)
	movers, outs := infos[:0:moving], infos[moving:moving:2*moving] // the moving pods; the nodes' lists
	groups := make([]repackGroup, 0, 64)
	for _, t := range c.claims {
		for _, p := range t.infos {
			if p.moves != moveYes {
				continue
			}
			if n := len(groups); n == 0 || !slices.Equal(groups[n-1].req, p.requests) {
				groups = append(groups, repackGroup{req: p.requests, val: valueOf(p.requests), from: len(movers)})
			}
			movers = append(movers, p)
		}
	}
	for g := range groups {
		end := len(movers)
		if g+1 < len(groups) {
			end = groups[g+1].from
		}
		groups[g].pods = movers[groups[g].from:end:end]
	}
	slices.SortStableFunc(groups, func(a, b repackGroup) int { return cmp.Compare(b.val, a.val) })

	// The candidates: the types worth nearly their price at the duals (the others cannot fill
	// a node as well), and of those only the ones no other candidate worth as much contains (at
	// least as much of every resource): the larger type holds any fill of the smaller one at the
	// same $ per value, and the last, partly filled nodes are priced down to the cheapest type
	// that holds them at the end.
	type cand struct {
		j     int // position in list
		worth float64
	}
	top := 0.0
	for j, pr := range list {
		w := 0.0
		for k := range lpRows {
			w += y[k] * lp.cols[j][k]
		}
		if pr.price > 0 {
			w /= pr.price
		} else {
			w = math.Inf(1)
		}
		worths[j] = w
		top = max(top, w)
	}
	contains := func(a, b resVec) bool { // a ⊇ b
		for r := range a {
			if a[r] < b[r] {
				return false
			}
		}
		return true
	}
	dominates := func(y, x cand) bool {
		return y.worth >= x.worth*(1-1e-6) && contains(pool.alloc[list[y.j].i], pool.alloc[list[x.j].i])
	}
	// The types not dominated, kept as the list is read: a type dominated by one kept is
	// skipped; one that is not drops those it dominates (of equal types the first stays).
	cands := make([]cand, 0, 8)
	for j, w := range worths {
		if w <= 0 || w < top*(1-repackWorth) {
			continue
		}
		x := cand{j: j, worth: w}
		if slices.ContainsFunc(cands, func(y cand) bool { return dominates(y, x) }) {
			continue
		}
		cands = slices.DeleteFunc(cands, func(z cand) bool { return dominates(x, z) })
		cands = append(cands, x)
	}
	// The fills are tried best worth first, the larger type first among equals.
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.worth, a.worth); c != 0 {
			return c
		}
		return cmp.Compare(list[b.j].price, list[a.j].price)
	})

	// fill packs a node of candidate ci's type, preloaded with pre (nil for none), from the
	// pods not yet taken, and returns their value; take lists what it took, by group. It keeps
	// the node balanced: each group is in the bucket of the row its pods use most of the
	// type's (their dominant row), and the next pods come from the bucket of the row the node
	// has used least so far, as many as keep that row within repackStep of the next least
	// used one. Filling in value order alone saturates one resource of a large node long
	// before the others. The buckets are per candidate, in value order, made once; each
	// keeps where its first group not used up is.
	type bucketSet struct {
		b     [][]int32
		start []int
		inv   []float64 // 1 / the type's allocatable, per row (0 where it has none)
	}
	sets := make([]bucketSet, len(cands))
	for ci, cd := range cands {
		alloc := pool.alloc[list[cd.j].i]
		inv := make([]float64, nr)
		for k, r := range rows {
			if alloc[r] > 0 {
				inv[k] = 1 / float64(alloc[r])
			}
		}
		bs := bucketSet{b: make([][]int32, nr), start: make([]int, nr), inv: inv}
		for g := range groups {
			d, most := 0, -1.0
			for k, r := range rows {
				if f := float64(groups[g].req[r]) * inv[k]; f > most {
					d, most = k, f
				}
			}
			bs.b[d] = append(bs.b[d], int32(g))
		}
		sets[ci] = bs
	}
	// The least of each resource any moving pod requests: a node with less than that left
	// of a resource every pod requests takes no more pods.
	minReq := make(resVec, nres)
	for r := range minReq {
		minReq[r] = math.MaxInt64
	}
	for g := range groups {
		for r, v := range groups[g].req {
			minReq[r] = min(minReq[r], v)
		}
	}
	var needed []int // the resources every moving pod requests some of
	for r, m := range minReq {
		if m > 0 {
			needed = append(needed, r)
		}
	}
	left := len(movers)
	used := make(resVec, nres)
	took := make([]int, len(groups)) // this fill's count per group
	type takeRun struct{ g, n int }
	var take []takeRun
	next := make([]int, nr)
	fill := func(ci int, pre resVec) float64 {
		alloc := pool.alloc[list[cands[ci].j].i]
		bs := &sets[ci]
		clear(used)
		if pre != nil {
			used.add(pre)
		}
		clear(took)
		take = take[:0]
		for k := range next {
			for bs.start[k] < len(bs.b[k]) && groups[bs.b[k][bs.start[k]]].next == len(groups[bs.b[k][bs.start[k]]].pods) {
				bs.start[k]++
			}
			next[k] = bs.start[k]
		}
		val := 0.0
		for {
			// The row least used so far, and the next least, among those whose bucket
			// still has pods.
			k, least, second := -1, math.Inf(1), math.Inf(1)
			for kk, r := range rows {
				if next[kk] >= len(bs.b[kk]) {
					continue
				}
				f := float64(used[r]) * bs.inv[kk]
				switch {
				case f < least:
					k, least, second = kk, f, least
				case f < second:
					second = f
				}
			}
			if k < 0 {
				break
			}
			// Its next group with a pod that fits (none that does not fit now ever will:
			// used only grows), and how many of it fit.
			b := bs.b[k]
			n := 0
			var g int
			for ; next[k] < len(b); next[k]++ {
				g = int(b[next[k]])
				n = len(groups[g].pods) - groups[g].next - took[g]
				req := groups[g].req
				for r, v := range req {
					if v > 0 && n > 0 {
						n = min(n, int((alloc[r]-used[r])/v))
					}
				}
				if n > 0 {
					break
				}
			}
			if n <= 0 {
				continue
			}
			// As many as keep the row within repackStep of the next least used one.
			if r := rows[k]; !math.IsInf(second, 1) && groups[g].req[r] > 0 && bs.inv[k] > 0 {
				room := (second+repackStep)/bs.inv[k] - float64(used[r])
				n = max(1, min(n, int(room/float64(groups[g].req[r]))))
			}
			for r, v := range groups[g].req {
				used[r] += int64(n) * v
			}
			val += float64(n) * groups[g].val
			took[g] += n
			take = append(take, takeRun{g, n})
			full := false
			for _, r := range needed {
				if alloc[r]-used[r] < minReq[r] {
					full = true
					break
				}
			}
			if full {
				break
			}
		}
		return val
	}
	type tried struct {
		ci   int
		e    float64
		take []takeRun // cut from takes
	}
	var trials []tried
	var takes []takeRun
	// takeAll marks the pods of a fill taken and returns them, and their requests in sum.
	takeAll := func(take []takeRun) ([]*podInfo, resVec) {
		at := len(outs)
		sum := make(resVec, nres)
		for _, t := range take {
			g := &groups[t.g]
			outs = append(outs, g.pods[g.next:g.next+t.n]...)
			for r, v := range g.req {
				sum[r] += int64(t.n) * v
			}
			g.next += t.n
			left -= t.n
		}
		return outs[at:len(outs):len(outs)], sum
	}
	// open fills one node, preloaded with pre (the pods staying on a claim, worth base; nil for
	// a new node), and returns the moving pods it takes, or false when no type holds pre.
	open := func(pre resVec, base float64) ([]*podInfo, resVec, bool) {
		bestE := -1.0
		trials, takes = trials[:0], takes[:0]
		for ci, cd := range cands {
			if cd.worth < bestE*(1-repackSlack) {
				break
			}
			pr := list[cd.j]
			if pre != nil && !pre.fitsIn(pool.alloc[pr.i]) {
				continue
			}
			val := fill(ci, pre)
			if len(take) == 0 && pre == nil {
				continue
			}
			e := math.Inf(1)
			if pr.price > 0 {
				e = (base + val) / pr.price
			}
			at := len(takes)
			takes = append(takes, take...)
			trials = append(trials, tried{ci, e, takes[at:len(takes):len(takes)]})
			bestE = max(bestE, e)
		}
		// Of the fills within repackSlack of the best, the largest type: fewer, larger nodes
		// for nearly the same $ per value.
		best := -1
		for x, tr := range trials {
			if tr.e < bestE*(1-repackSlack) {
				continue
			}
			if best < 0 || list[cands[tr.ci].j].price > list[cands[trials[best].ci].j].price {
				best = x
			}
		}
		if best < 0 {
			if pre == nil {
				return nil, nil, false
			}
			_, ok := cheapest(pre)
			return nil, make(resVec, nres), ok
		}
		out, sum := takeAll(trials[best].take)
		return out, sum, true
	}
	// The claims with pods that stay first (they launch anyway), then new nodes.
	var nodes []repackNode
	kept := make([]int, 0, len(c.claims)) // nodes[i] refills c.claims[kept[i]] for i < len(kept)
	for ci := range c.claims {
		if fixedSum[ci] == nil {
			continue
		}
		moved, sum, ok := open(fixedSum[ci], valueOf(fixedSum[ci]))
		if !ok {
			return
		}
		sum.add(fixedSum[ci])
		nodes = append(nodes, repackNode{fixed: fixed[ci], pods: moved, sum: sum})
		kept = append(kept, ci)
	}
	for left > 0 {
		moved, sum, ok := open(nil, 0)
		if !ok || len(moved) == 0 {
			return // a pod no candidate holds: leave the class as placed
		}
		nodes = append(nodes, repackNode{pods: moved, sum: sum})
	}
	// Each node at the cheapest type that holds its pods.
	newPrice := 0.0
	for i := range nodes {
		price, ok := cheapest(nodes[i].sum)
		if !ok {
			return
		}
		newPrice += price
	}
	if newPrice > oldPrice*(1-repackMinSaving) {
		return
	}
	// The pool's limits: on nodes, and on resources as claims reserve them (the largest
	// capacity of their candidate types).
	if q, ok := pool.np.Remaining["nodes"]; ok && s.claimsOf(pool)-int64(len(c.claims))+int64(len(nodes)) > q.Value() {
		return
	}
	compat := s.compatible(pool, c.reqID)
	if pool.fit == nil {
		pool.fit = newFitTable(pool.alloc, nres, &s.bits, &s.vecs)
	}
	zero := resVec(s.vecs.take(nres))
	plans := make([]plan, len(nodes))
	for i := range nodes {
		its := bitset(s.bits.take(len(compat)))
		copy(its, compat)
		low := resVec(s.vecs.take(nres))
		if !narrowTypes(pool.fit, pool.alloc, its, zero, nodes[i].sum, low) {
			return
		}
		plans[i] = plan{reqID: c.reqID, its: its, minAvail: low}
	}
	if pool.limited != nil {
		left := pool.remaining.clone()
		for _, t := range c.claims {
			if t.reserved != nil {
				left.add(t.reserved)
			}
		}
		for i := range plans {
			left.sub(pool.reservation(make(resVec, nres), plans[i].its))
		}
		for r, lim := range pool.limited {
			if lim && left[r] < 0 {
				return
			}
		}
	}
	// The claims with pods that stay keep them and take their new pods; the others are emptied
	// (they leave no result) and new claims take their place.
	refilled := make([]bool, len(c.claims))
	for i, ci := range kept {
		refilled[ci] = true
		s.refill(c.claims[ci], plans[i], nodes[i].fixed, nodes[i].pods)
	}
	for ci, t := range c.claims {
		if refilled[ci] {
			continue
		}
		if t.reserved != nil {
			pool.remaining.add(t.reserved)
			t.reserved = nil
		}
		t.pods, t.infos = t.pods[:0], t.infos[:0]
		clear(t.used)
	}
	for i := len(kept); i < len(nodes); i++ {
		t := &s.claimSlab.take(1)[0]
		*t = target{idx: len(s.targets), pool: pool, reqs: s.reqByID[c.reqID], reqID: c.reqID, used: resVec(s.vecs.take(nres))}
		t.hostname = pool.np.Name + "-placeholder-" + strconv.Itoa(s.claimSeq)
		s.claimSeq++
		s.refill(t, plans[i], nil, nodes[i].pods)
		s.targets = append(s.targets, t)
	}
}

// repackRow is a row of repack's covering program: resource r's demand d, of the pods
// requesting at least v of resource s (s < 0: all the class's pods).
type repackRow struct {
	r, s int
	v, d int64
}

// repackShort reports whether the program's solution x buys a type with less of a resource
// than the class's largest request of it.
func (s *solver) repackShort(pool *poolState, list []priced, c *repackClass, rows []int, x []float64) bool {
	var most resVec
	for j, pr := range list {
		if x[j] <= 1e-12 {
			continue
		}
		if most == nil {
			most = make(resVec, len(pool.alloc[pr.i]))
			for _, t := range c.claims {
				for _, p := range t.infos {
					for _, r := range rows {
						most[r] = max(most[r], p.requests[r])
					}
				}
			}
		}
		for _, r := range rows {
			if pool.alloc[pr.i][r] < most[r] {
				return true
			}
		}
	}
	return false
}

// repackCutsPer is the most size cuts per resource repack's program adds.
const repackCutsPer = 4

// appendSizeCuts appends to the class's program rows its size cuts, at the largest distinct
// requests of each resource (up to repackCutsPer) that some type of the list is too small for.
func (s *solver) appendSizeCuts(out []repackRow, pool *poolState, list []priced, c *repackClass, rows []int, demand resVec) []repackRow {
	var vals []int64
	for _, sr := range rows {
		if sr == resPods {
			continue
		}
		vals = vals[:0]
		for _, t := range c.claims {
			for _, p := range t.infos {
				if v := p.requests[sr]; v > 0 {
					vals = append(vals, v)
				}
			}
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		// The smallest type's allocatable: cuts at or below it change nothing.
		least := int64(math.MaxInt64)
		for _, pr := range list {
			least = min(least, pool.alloc[pr.i][sr])
		}
		added := 0
		for i := len(vals) - 1; i >= 0 && added < repackCutsPer; i-- {
			v := vals[i]
			if v <= least {
				break
			}
			d := make(resVec, len(demand))
			for _, t := range c.claims {
				for _, p := range t.infos {
					if p.requests[sr] >= v {
						d.add(p.requests)
					}
				}
			}
			for _, r := range rows {
				if d[r] > 0 {
					out = append(out, repackRow{r: r, s: sr, v: v, d: d[r]})
				}
			}
			added++
		}
	}
	return out
}

// refill gives claim t the types of pl and exactly the pods given. The lists are new (the
// claim's old arrays may still be read for other claims' pods until every claim is refilled).
func (s *solver) refill(t *target, pl plan, fixed, moved []*podInfo) {
	s.commit(nil, t, pl)
	t.pods, t.infos = nil, nil
	clear(t.used)
	s.growPods(t, len(fixed)+len(moved))
	for _, list := range [2][]*podInfo{fixed, moved} {
		for _, p := range list {
			t.used.add(p.requests)
			t.pods = append(t.pods, p.pod)
			t.infos = append(t.infos, p)
		}
	}
}

// cheapestOf is the first type of a price-ordered list that is among its.
func cheapestOf(list []priced, its bitset) (int, float64, bool) {
	for _, pr := range list {
		if its.has(pr.i) {
			return pr.i, pr.price, true
		}
	}
	return 0, 0, false
}
