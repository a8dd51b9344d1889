package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Topology bookkeeping per target: checking decided domains and pinning undecided ones.

// domainAllowed checks one of the pod's own groups against a decided domain.
func (s *solver) domainAllowed(a *attempt, og ownGroup, t *target, d string) bool {
	g := og.g
	c := g.count(t, d)
	switch g.kind {
	case kindSpread:
		self := int32(0)
		if og.self {
			self = 1
		}
		if !g.hostname && !containsSorted(g.universe, d) {
			return false
		}
		return c+self-g.globalMin(len(s.pools) > 0, s.targets[:s.numExisting], s) <= g.maxSkew
	case kindAffinity:
		return c > 0 || (g.total == 0 && og.self)
	default:
		return c == 0
	}
}

// topologyAndTypes decides the target's topology domains for the pod (pinning undecided keys of
// a claim to one value) and, for claims, the instance types that remain.
func (s *solver) topologyAndTypes(a *attempt, t *target, merged int32) (plan, error) {
	for _, key := range a.keys {
		if d, ok := s.domainOf(t, key); ok || t.existing != nil {
			if err := s.fixedDomainErr(a, t, key, d, ok); err != nil {
				return plan{}, err
			}
			continue
		}
		// Undecided claim domain: try candidate domains in preference order.
		cands, err := s.candidates(a, t, key, merged)
		if err != nil {
			return plan{}, err
		}
		if cands == nil {
			continue
		}
		pinned := false
		for _, d := range cands {
			id := s.pin(merged, key, d)
			if _, _, ok := s.types(t, id, a.p.requests); ok {
				merged = id
				pinned = true
				break
			}
		}
		if !pinned {
			return plan{}, fmt.Errorf("no instance type in any allowed %s domain fits", key)
		}
	}
	if t.existing != nil {
		return plan{reqID: merged}, nil
	}
	its, low, ok := s.types(t, merged, a.p.requests)
	if !ok {
		return plan{}, s.explainTypes(t, merged, a.p.requests)
	}
	return plan{reqID: merged, its: its, minAvail: low}, nil
}

// topologyKeys lists the non-hostname keys of every group involved, sorted.
func (s *solver) topologyKeys(a *attempt) []string {
	keys := s.keysBuf[:0]
	add := func(k string) {
		if k == LabelHostname {
			return
		}
		for _, x := range keys {
			if x == k {
				return
			}
		}
		keys = append(keys, k)
	}
	for _, og := range a.own {
		add(og.g.key)
	}
	for _, g := range a.counted {
		add(g.key)
	}
	if len(keys) > 1 {
		sort.Strings(keys)
	}
	s.keysBuf = keys[:0]
	if len(keys) == 0 {
		return nil
	}
	out := s.strSlab.take(len(keys))
	copy(out, keys)
	return out
}

func (s *solver) fixedDomainOK(a *attempt, t *target, key, d string, has bool) bool {
	return s.fixedDomainErr(a, t, key, d, has) == nil
}

// fixedDomainErr checks the pod's groups on key against a decided domain d (has=false: the
// node lacks the key) and names the group that rejects it.
func (s *solver) fixedDomainErr(a *attempt, t *target, key, d string, has bool) error {
	for _, og := range a.own {
		if og.g.key != key {
			continue
		}
		if !has {
			// A node without the key: spread and affinity cannot be met there, anti-affinity is.
			if og.g.kind != kindAnti {
				return og.g.rejection()
			}
			continue
		}
		if !s.domainAllowed(a, og, t, d) {
			return og.g.rejection()
		}
	}
	if has {
		for _, g := range a.inverse {
			if g.key == key && g.ownersAt(t, d) > 0 {
				return &inverseError{g: g, domain: d}
			}
		}
	}
	return nil
}

// inverseError: a pod already in the domain has required anti-affinity against this pod.
type inverseError struct {
	g      *topoGroup
	domain string
}

func (e *inverseError) Error() string {
	return "pods in " + e.g.key + "=" + e.domain + " have anti-affinity to this pod (selector " + e.g.sel().String() + ")"
}

// candidates orders the domains an undecided claim could be pinned to for key. nil means the
// key needs no pinning (no known domains and nothing requiring one).
func (s *solver) candidates(a *attempt, t *target, key string, merged int32) ([]string, error) {
	reqs := s.reqByID[merged]
	out := s.candBuf[:0]
	defer func() { s.candBuf = out[:0] }()
	for _, d := range s.poolDomains(t.pool, key) {
		if reqs.Has(key, d) && s.fixedDomainOK(a, t, key, d, true) {
			out = append(out, d)
		}
	}
	var spread, aff *topoGroup
	for _, og := range a.own {
		if og.g.key != key {
			continue
		}
		if og.g.kind == kindSpread && spread == nil {
			spread = og.g
		}
		if og.g.kind == kindAffinity && aff == nil {
			aff = og.g
		}
	}
	if len(out) == 0 {
		if spread != nil || aff != nil || len(s.poolDomains(t.pool, key)) > 0 {
			for _, og := range a.own {
				if og.g.key == key {
					return nil, &topologyError{g: og.g}
				}
			}
			return nil, fmt.Errorf("no %s domain available", key)
		}
		return nil, nil
	}
	var order *topoGroup
	switch {
	case spread != nil:
		order = spread
	case aff != nil:
		order = aff
	default:
		for _, g := range a.counted {
			if g.key == key && g.kind == kindSpread {
				order = g
				break
			}
		}
	}
	if order != nil {
		desc := order.kind == kindAffinity
		slices.SortStableFunc(out, func(x, y string) int {
			cx, cy := order.counts[x], order.counts[y]
			if cx != cy {
				if desc {
					return cmp.Compare(cy, cx)
				}
				return cmp.Compare(cx, cy)
			}
			return strings.Compare(x, y)
		})
	}
	return out, nil
}

// pinTarget decides an undecided claim's domain for key, for a group created after pods that
// it counts were placed on the claim. It keeps the claim's instance types non-empty.
func (s *solver) pinTarget(t *target, key string, g *topoGroup) (string, bool) {
	cands := append([]string(nil), s.poolDomains(t.pool, key)...)
	sort.SliceStable(cands, func(i, j int) bool { return g.counts[cands[i]] < g.counts[cands[j]] })
	zero := make(resVec, len(s.ri.names))
	for _, d := range cands {
		if !t.reqs.Has(key, d) {
			continue
		}
		id := s.pin(t.reqID, key, d)
		if its, low, ok := s.types(t, id, zero); ok {
			s.commit(nil, t, plan{reqID: id, its: its, minAvail: low})
			return d, true
		}
	}
	return "", false
}
