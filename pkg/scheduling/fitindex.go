package scheduling

import "sort"

// fitIndex answers "which of a pool's instance types have at least v of resource r
// allocatable" with a few word-wise ANDs instead of a scan of every type: per resource, the
// types sorted by allocatable and, for every position in that order, the bitset of the types
// from there on. A claim narrows its candidates by the pods it holds on every commit, so this
// is the solver's hottest question. Built lazily per resource, once per solve and pool.
type fitIndex struct {
	n      int        // instance types
	words  int        // words per bitset
	order  [][]int    // per resource: type positions by ascending allocatable
	suffix [][]uint64 // per resource: (n+1) bitsets, suffix[k] = order[k:]
	lowest []int64    // per resource: smallest allocatable of any type
}

func newFitIndex(alloc []resVec, resources int) *fitIndex {
	x := &fitIndex{n: len(alloc), words: (len(alloc) + 63) / 64, order: make([][]int, resources), suffix: make([][]uint64, resources), lowest: make([]int64, resources)}
	for r := range x.lowest {
		for i, a := range alloc {
			if i == 0 || a[r] < x.lowest[r] {
				x.lowest[r] = a[r]
			}
		}
	}
	return x
}

// build prepares resource r.
func (x *fitIndex) build(alloc []resVec, r int) {
	order := make([]int, x.n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return alloc[order[a]][r] < alloc[order[b]][r] })
	suf := make([]uint64, (x.n+1)*x.words)
	for k := x.n - 1; k >= 0; k-- {
		copy(suf[k*x.words:(k+1)*x.words], suf[(k+1)*x.words:(k+2)*x.words])
		i := order[k]
		suf[k*x.words+i/64] |= 1 << (uint(i) % 64)
	}
	x.order[r], x.suffix[r] = order, suf
}

// narrow keeps in out only the types with used+req fitting their allocatable, and returns the
// componentwise minimum allocatable of what is left (nil when nothing is).
func (x *fitIndex) narrow(alloc []resVec, out bitset, used, req resVec) resVec {
	start := make([]int, len(used)) // per resource: first position in order that fits
	for r := range used {
		need := used[r] + req[r]
		if need <= x.lowest[r] {
			continue // every type fits
		}
		if x.order[r] == nil {
			x.build(alloc, r)
		}
		order := x.order[r]
		k := sort.Search(x.n, func(k int) bool { return alloc[order[k]][r] >= need })
		if k == x.n {
			return nil
		}
		start[r] = k
		suf := x.suffix[r][k*x.words : (k+1)*x.words]
		for wi := range out {
			out[wi] &= suf[wi]
		}
	}
	if out.empty() {
		return nil
	}
	low := make(resVec, len(used))
	for r := range low {
		if x.order[r] == nil {
			x.build(alloc, r)
		}
		for _, i := range x.order[r][start[r]:] {
			if out.has(i) {
				low[r] = alloc[i][r]
				break
			}
		}
	}
	return low
}
