package scheduling

import (
	"cmp"
	"slices"
)

// Narrowing a claim's instance types by resources. A claim filling up with pods crosses the
// allocatable of its smallest candidates every pod or two, so "which types can still hold
// used+req" is asked on most commits. fitTable answers it with a binary search per resource
// over a contiguous sorted array and a word-wise AND with a precomputed suffix bitset, and
// narrowTypes allocates its results from per-solve slabs: no scan of the types, no allocation
// per call.

// fitTable is, per resource, the pool's types sorted by allocatable (vals holds the sorted
// values, contiguous so the search stays in cache) and for every position k the bitset of the
// types from k on. Built lazily per resource, once per solve and pool.
type fitTable struct {
	n, words int
	lowest   []int64    // per resource: smallest allocatable of any type
	vals     [][]int64  // per resource: allocatable, ascending
	suffix   [][]uint64 // per resource: (n+1) bitsets, suffix[k] = types at sorted positions k..n-1
	order    []int32    // build's scratch
	// The solver's slabs: the tables die with the solve (and go back to its scratch).
	bits *slab[uint64]
	vecs *slab[int64]
}

func newFitTable(alloc []resVec, resources int, bits *slab[uint64], vecs *slab[int64]) *fitTable {
	x := &fitTable{n: len(alloc), words: (len(alloc) + 63) / 64, lowest: vecs.take(resources),
		vals: make([][]int64, resources), suffix: make([][]uint64, resources), bits: bits, vecs: vecs}
	for r := range x.lowest {
		for i, a := range alloc {
			if i == 0 || a[r] < x.lowest[r] {
				x.lowest[r] = a[r]
			}
		}
	}
	return x
}

func (x *fitTable) build(alloc []resVec, r int) {
	if x.order == nil {
		x.order = make([]int32, x.n)
	}
	order := x.order
	for i := range order {
		order[i] = int32(i)
	}
	// Ties by position: equal values keep type order (only the suffix sets matter, and those
	// do not depend on how ties are ordered).
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(alloc[a][r], alloc[b][r]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	vals := x.vecs.take(x.n)
	suf := x.bits.take((x.n + 1) * x.words)
	for k := x.n - 1; k >= 0; k-- {
		copy(suf[k*x.words:(k+1)*x.words], suf[(k+1)*x.words:(k+2)*x.words])
		i := order[k]
		suf[k*x.words+int(i)/64] |= 1 << (uint(i) % 64)
		vals[k] = alloc[i][r]
	}
	x.vals[r], x.suffix[r] = vals, suf
}

// narrowTypes keeps in out only the types with used+req fitting their allocatable and writes
// into low a componentwise lower bound of what is left: all types' smallest allocatable at or
// above the need (the pool's smallest where nothing was filtered). It reports false when no
// type is left. The bound only serves types' fast path ("the pods fit every candidate"), for
// which any lower bound is sound, and costs no scan.
func narrowTypes(x *fitTable, alloc []resVec, out bitset, used, req, low resVec) bool {
	for r := range used {
		need := used[r] + req[r]
		if need <= x.lowest[r] {
			low[r] = x.lowest[r] // every type fits
			continue
		}
		if x.vals[r] == nil {
			x.build(alloc, r)
		}
		vals := x.vals[r]
		lo, hi := 0, x.n // first k with vals[k] >= need
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if vals[m] < need {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo == x.n {
			return false
		}
		low[r] = vals[lo]
		suf := x.suffix[r][lo*x.words : (lo+1)*x.words]
		for wi := range out {
			out[wi] &= suf[wi]
		}
	}
	return !out.empty()
}

// slab hands out slices of per-solve chunks: the instance-type bitsets and bounds a claim
// moves through as it fills are many and small, and die with the solve.
// chunk is the elements per allocation (4096 when zero); a negative chunk starts at its
// absolute value and doubles with every allocation up to 4096 (for large elements, so that a
// small solve allocates little). A slab kept in a solve's scratch (scratch.go) keeps its
// chunks: recycle clears them and the next solve takes them again before allocating.
type slab[T any] struct {
	buf   []T
	chunk int
	used  [][]T // chunks handed out this solve (kept only when recycling)
	spare [][]T // cleared chunks from earlier solves
	keep  bool  // remember chunks for recycle
}

func (a *slab[T]) take(n int) []T {
	if len(a.buf) < n {
		a.trimLast()
		a.buf = a.spareChunk(n)
		if a.buf == nil {
			c := a.chunk
			switch {
			case c == 0:
				c = 4096
			case c < 0:
				c = -c
				a.chunk = -min(2*c, 4096)
			}
			a.buf = make([]T, max(c, n))
			if a.keep {
				a.used = append(a.used, a.buf)
			}
		}
	}
	out := a.buf[:n:n]
	a.buf = a.buf[n:]
	return out
}

// spareChunk returns a kept chunk of at least n elements, nil if none.
func (a *slab[T]) spareChunk(n int) []T {
	for i := len(a.spare) - 1; i >= 0; i-- {
		if c := a.spare[i]; len(c) >= n {
			a.spare = append(a.spare[:i], a.spare[i+1:]...)
			a.used = append(a.used, c)
			return c
		}
	}
	return nil
}

// trimLast cuts the chunk being handed out (the last one used) to what was handed out of it:
// the rest was never written, and recycle clears only what was (clearing memory that holds
// pointers costs a write barrier per word while the garbage collector marks).
func (a *slab[T]) trimLast() {
	if k := len(a.used); k > 0 {
		last := a.used[k-1]
		a.used[k-1] = last[:len(last)-len(a.buf)]
	}
}

// recycle clears the chunks handed out since the last recycle (zero, and holding no pointer
// into the solve) and keeps them for the next solve.
func (a *slab[T]) recycle() {
	a.trimLast()
	for i, c := range a.used {
		clear(c)
		a.used[i] = c[:cap(c)]
	}
	a.spare = append(a.spare, a.used...)
	clear(a.used)
	a.used = a.used[:0]
	a.buf = nil
}
