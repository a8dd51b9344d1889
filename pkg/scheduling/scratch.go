package scheduling

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Scratch memory. A solve needs a few arrays as long as its queue (podInfos, queue keys, the
// queue) and slabs of constraints, attempts, bitsets and vectors, none of which outlives it:
// Results hold none of them. Allocated afresh by every solve they are most of its bytes
// (1.2 MB for 4,000 pods), and in a process that solves repeatedly (the provisioner's batches,
// a disruption pass's many questions) that is garbage collected over and over; in a young
// process each solve also lands on heap pages the OS has to fault in first, which on a
// virtual machine costs more than the solve itself. So Solve takes its scratch from a pool
// and gives it back cleared when it returns.
//
// This is memory only: nothing a solve computed survives in it (recycle zeroes what was used),
// so every solve still starts from nothing and Solve stays pure. sync.Pool drops idle scratch
// at garbage collection, so a large solve's arrays are not held for long.
type scratch struct {
	podInfos  []podInfo
	queueKeys []queueKey
	uids      []string
	queue     []*podInfo
	consSlab  slab[podCons]
	attSlab   slab[attempt]
	bits      slab[uint64]
	vecs      slab[int64]
	vecHdrs   slab[resVec]
	podPtrs   slab[*corev1.Pod]
	infoPtrs  slab[*podInfo]
	repack    repackScratch
	claimSlab slab[target]
	groupSlab slab[*topoGroup]
	ownSlab   slab[ownGroup]
	strSlab   slab[string]
	prices    slab[priced]
	chosen    []priced
	ints      slab[int]
	counts    slab[int32]
	groups    slab[topoGroup]
	targets   []*target
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{
		consSlab:  slab[podCons]{chunk: -16, keep: true},
		attSlab:   slab[attempt]{chunk: -16, keep: true},
		bits:      slab[uint64]{keep: true},
		vecs:      slab[int64]{keep: true},
		podPtrs:   slab[*corev1.Pod]{keep: true},
		infoPtrs:  slab[*podInfo]{keep: true},
		claimSlab: slab[target]{chunk: -16, keep: true},
		vecHdrs:   slab[resVec]{chunk: -64, keep: true},
		groupSlab: slab[*topoGroup]{chunk: 1024, keep: true},
		ownSlab:   slab[ownGroup]{chunk: 512, keep: true},
		strSlab:   slab[string]{chunk: 1024, keep: true},
		prices:    slab[priced]{chunk: 1024, keep: true},
		ints:      slab[int]{chunk: 512, keep: true},
		counts:    slab[int32]{chunk: 2048, keep: true},
		groups:    slab[topoGroup]{chunk: -16, keep: true},
	}
}}

// useScratch gives the solver a pooled scratch.
func (s *solver) useScratch() {
	sc := scratchPool.Get().(*scratch)
	s.sc = sc
	s.consSlab, s.attSlab, s.bits, s.vecs, s.podPtrs, s.claimSlab = sc.consSlab, sc.attSlab, sc.bits, sc.vecs, sc.podPtrs, sc.claimSlab
	s.groupSlab, s.ownSlab, s.strSlab, s.vecHdrs = sc.groupSlab, sc.ownSlab, sc.strSlab, sc.vecHdrs
	s.prices, s.chosenBuf, s.infoPtrs = sc.prices, sc.chosen, sc.infoPtrs
	s.rs = &sc.repack
	s.ints, s.counts, s.groupMem, s.targets = sc.ints, sc.counts, sc.groups, sc.targets[:0]
}

// releaseScratch clears what the solve used of its scratch and returns it to the pool. The
// solver must not be used afterwards.
func (s *solver) releaseScratch() {
	sc := s.sc
	if sc == nil {
		return
	}
	s.sc = nil
	clear(s.podInfos)
	clear(s.uids)
	clear(s.queue)
	sc.podInfos, sc.queueKeys, sc.uids, sc.queue = s.podInfos[:0], s.queueKeys[:0], s.uids[:0], s.queue[:0]
	s.podInfos, s.queueKeys, s.uids, s.queue = nil, nil, nil, nil
	s.consSlab.recycle()
	s.attSlab.recycle()
	s.bits.recycle()
	s.vecs.recycle()
	s.podPtrs.recycle()
	s.infoPtrs.recycle()
	sc.infoPtrs = s.infoPtrs
	clear(sc.repack.infos[:cap(sc.repack.infos)])
	s.rs = nil
	s.claimSlab.recycle()
	s.groupSlab.recycle()
	s.ownSlab.recycle()
	s.strSlab.recycle()
	s.vecHdrs.recycle()
	s.prices.recycle()
	clear(s.chosenBuf[:cap(s.chosenBuf)])
	sc.prices, sc.chosen = s.prices, s.chosenBuf[:0]
	s.ints.recycle()
	s.counts.recycle()
	s.groupMem.recycle()
	clear(s.targets)
	sc.ints, sc.counts, sc.groups, sc.targets = s.ints, s.counts, s.groupMem, s.targets[:0]
	s.targets = nil
	sc.consSlab, sc.attSlab, sc.bits, sc.vecs, sc.podPtrs, sc.claimSlab = s.consSlab, s.attSlab, s.bits, s.vecs, s.podPtrs, s.claimSlab
	sc.groupSlab, sc.ownSlab, sc.strSlab, sc.vecHdrs = s.groupSlab, s.ownSlab, s.strSlab, s.vecHdrs
	scratchPool.Put(sc)
}

// sized returns buf resized to n elements (zero: buf comes cleared), reusing its array when
// large enough.
func sized[T any](buf []T, n int) []T {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]T, n)
}
