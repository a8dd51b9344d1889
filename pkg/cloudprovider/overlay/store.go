package overlay

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Store holds the last Evaluation and applies it to instance types. Until
// the first evaluation no NodePool has been evaluated.
type Store struct {
	current atomic.Pointer[applied]
}

// applied is one evaluation with the overlaid copies made from it.
type applied struct {
	ev *Evaluation
	mu sync.Mutex
	// copies keeps, per pool and instance type, the last overlaid copy and
	// what it was made from, so that unchanged instance types come back as
	// the same object (the solver's Cache keys on instance type identity).
	copies map[string]map[string]*overlaid
}

type overlaid struct {
	src    *scheduling.InstanceType
	prices []float64
	avail  []bool
	out    *scheduling.InstanceType
}

// NewStore returns a Store that has evaluated nothing.
func NewStore() *Store {
	s := &Store{}
	s.Update(&Evaluation{evaluated: map[string]bool{}})
	return s
}

// Update replaces the evaluation.
func (s *Store) Update(ev *Evaluation) {
	s.current.Store(&applied{ev: ev, copies: map[string]map[string]*overlaid{}})
}

// Evaluated reports whether the last evaluation covered the NodePool.
func (s *Store) Evaluated(nodePool string) bool {
	return s.current.Load().ev.evaluated[nodePool]
}

// ApplyAll returns the NodePool's instance types as the overlays change
// them: an instance type an overlay selects is a copy with its offerings'
// prices set or adjusted and its capacity extended; the others are returned
// as they are. A NodePool the last evaluation did not cover yields an
// *cloudprovider.UnevaluatedNodePoolError.
func (s *Store) ApplyAll(nodePool string, its []*scheduling.InstanceType) ([]*scheduling.InstanceType, error) {
	a := s.current.Load()
	if !a.ev.evaluated[nodePool] {
		return nil, cloudprovider.NewUnevaluatedNodePoolError(nodePool)
	}
	byType := a.ev.updates[nodePool]
	if len(byType) == 0 {
		return its, nil
	}
	out := make([]*scheduling.InstanceType, len(its))
	a.mu.Lock()
	defer a.mu.Unlock()
	memo := a.copies[nodePool]
	if memo == nil {
		memo = map[string]*overlaid{}
		a.copies[nodePool] = memo
	}
	for i, it := range its {
		u := byType[it.Name]
		if u == nil {
			out[i] = it
			continue
		}
		if m := memo[it.Name]; m != nil && m.from(it) {
			out[i] = m.out
			continue
		}
		m := &overlaid{src: it, prices: make([]float64, len(it.Offerings)), avail: make([]bool, len(it.Offerings))}
		for j := range it.Offerings {
			m.prices[j], m.avail[j] = it.Offerings[j].Price, it.Offerings[j].Available
		}
		m.out = u.apply(it)
		memo[it.Name] = m
		out[i] = m.out
	}
	return out, nil
}

// from reports whether the copy was made from it as it is now.
func (m *overlaid) from(it *scheduling.InstanceType) bool {
	if m.src != it || len(it.Offerings) != len(m.prices) {
		return false
	}
	for j := range it.Offerings {
		if it.Offerings[j].Price != m.prices[j] || it.Offerings[j].Available != m.avail[j] {
			return false
		}
	}
	return true
}

// apply returns a copy of it with the update applied; it is not modified.
func (u *typeUpdate) apply(it *scheduling.InstanceType) *scheduling.InstanceType {
	c := *it
	if len(u.capacity) > 0 {
		c.Capacity = make(corev1.ResourceList, len(it.Capacity)+len(u.capacity))
		for n, q := range it.Capacity {
			c.Capacity[n] = q
		}
		for n, q := range u.capacity {
			c.Capacity[n] = q.DeepCopy()
		}
		c.CapacityOverlaid = true
	}
	if len(u.prices) > 0 {
		c.Offerings = make([]scheduling.Offering, len(it.Offerings))
		copy(c.Offerings, it.Offerings)
		for j := range c.Offerings {
			if change, ok := u.prices[offeringKey(&c.Offerings[j])]; ok {
				c.Offerings[j].Price = change.Apply(c.Offerings[j].Price)
				c.Offerings[j].PriceOverlaid = true
			}
		}
	}
	return &c
}
