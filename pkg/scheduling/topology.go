package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
)

type groupKind uint8

const (
	kindSpread groupKind = iota
	kindAffinity
	kindAnti
)

func (k groupKind) String() string {
	switch k {
	case kindSpread:
		return "topology spread"
	case kindAffinity:
		return "pod affinity"
	}
	return "pod anti-affinity"
}

// nodeFilter restricts which nodes a topology spread constraint counts, per the constraint's
// nodeAffinityPolicy (Honor: only nodes matching the pod's node selector/affinity) and
// nodeTaintsPolicy (Honor: only nodes whose taints the pod tolerates).
type nodeFilter struct {
	reqs        Requirements
	tolerations []corev1.Toleration
	honorTaints bool
}

// topoGroup counts, per topology domain, the pods one selector matches. Pods with the same
// constraint share a group, so its counts are maintained once per placement instead of being
// recomputed per pod.
type topoGroup struct {
	id       int
	kind     groupKind
	key      string
	hostname bool
	allNS    bool
	ns       map[string]bool
	oneNS    string                // the only namespace of ns, when it has one (compared without a lookup)
	selector labels.Selector       // nil until sel builds it, for a simpleSelector
	ls       *metav1.LabelSelector // a simpleSelector's source
	eq       [][2]string           // the selector as key=value pairs, when eqOnly
	eqOnly   bool
	maxSkew  int32
	minDom   int32
	filter   *nodeFilter
	identity string
	ownedIDs []string // {identity}: the owned list of pods whose one anti-affinity term is g (ownedOf)

	counts     map[string]int32
	hostCounts []int32 // by target index, for hostname groups
	owners     map[string]int32
	hostOwners []int32
	total      int32
	universe   []string       // known domains (non-hostname), sorted
	full       map[int32]int  // hostname groups: prefix of targets whose count exceeds a limit
	err        *topologyError // the group's rejection, made once: most rejections are never shown
}

func (g *topoGroup) matches(pod *corev1.Pod) bool { return g.matchesFrom(pod, 0) }

// matchesFrom is matches for a pod known to carry the first `from` pairs of an eqOnly selector.
func (g *topoGroup) matchesFrom(pod *corev1.Pod, from int) bool {
	if g.oneNS != "" {
		if pod.Namespace != g.oneNS {
			return false
		}
	} else if !g.allNS && !g.ns[pod.Namespace] {
		return false
	}
	if g.eqOnly {
		for i := from; i < len(g.eq); i++ {
			if v, ok := pod.Labels[g.eq[i][0]]; !ok || v != g.eq[i][1] {
				return false
			}
		}
		return true
	}
	return g.sel().Matches(labels.Set(pod.Labels))
}

// compileSelector notes when the selector is a plain conjunction of key=value (matchLabels,
// the common case), which matches pods by map lookups instead of the generic selector.
func (g *topoGroup) compileSelector() {
	if g.selector == nil {
		return // simpleSelector did
	}
	reqs, selectable := g.selector.Requirements()
	if !selectable {
		return
	}
	eq := make([][2]string, 0, len(reqs))
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if r.Values().Len() != 1 {
				return
			}
			eq = append(eq, [2]string{r.Key(), r.Values().UnsortedList()[0]})
		default:
			return
		}
	}
	g.eq, g.eqOnly = eq, true
}

// simpleSelector takes in a selector of matchLabels only (nearly every one) without building
// its labels.Selector: the pairs sorted by key (the selector's order), each validated as
// metav1.LabelSelectorAsSelector would. It reports false for any other selector, and for an
// invalid one (the caller builds it, and so gets the error). sel builds the selector when
// something asks for it (error messages, existing nodes' bound pods).
func (g *topoGroup) simpleSelector(ls *metav1.LabelSelector) bool {
	if ls == nil || len(ls.MatchLabels) == 0 || len(ls.MatchExpressions) > 0 {
		return false
	}
	eq := make([][2]string, 0, len(ls.MatchLabels))
	for k, v := range ls.MatchLabels {
		if len(content.IsLabelKey(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			return false
		}
		eq = append(eq, [2]string{k, v})
	}
	slices.SortFunc(eq, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	g.ls, g.eq, g.eqOnly = ls, eq, true
	return true
}

// sel is the group's selector.
func (g *topoGroup) sel() labels.Selector {
	if g.selector == nil {
		g.selector, _ = metav1.LabelSelectorAsSelector(g.ls) // valid: simpleSelector checked
	}
	return g.selector
}

func getIdx(s []int32, i int) int32 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// incIdx increments s[i], growing s (zero-filled) as needed: in the solve's scratch when it
// has one (the arrays it outgrows are not garbage).
func (s *solver) incIdx(c []int32, i int) []int32 {
	if i >= len(c) {
		if i >= cap(c) {
			var grown []int32
			n := max(16, 2*cap(c), i+1)
			if s.sc != nil {
				grown = s.counts.take(n)
			} else {
				grown = make([]int32, n)
			}
			copy(grown, c)
			c = grown[:len(c)]
		}
		c = c[:i+1] // the scratch and make give zeroed memory
	}
	c[i]++
	return c
}

// newGroup is a zeroed group: from the solve's scratch when it has one.
func (s *solver) newGroup() *topoGroup {
	if s.sc == nil {
		return &topoGroup{}
	}
	return &s.groupMem.take(1)[0]
}

func (g *topoGroup) count(t *target, domain string) int32 {
	if g.hostname {
		return getIdx(g.hostCounts, t.idx)
	}
	return g.counts[domain]
}

func (g *topoGroup) ownersAt(t *target, domain string) int32 {
	if g.hostname {
		return getIdx(g.hostOwners, t.idx)
	}
	return g.owners[domain]
}

// globalMin is the smallest count over the known domains; fewer known domains than minDomains
// makes it zero, as in the kube-scheduler. For hostname a brand-new node is always a possible
// domain, so the minimum is zero whenever new nodes can be created.
func (g *topoGroup) globalMin(canCreate bool, existingHosts []*target, s *solver) int32 {
	if g.hostname {
		if canCreate {
			return 0
		}
		min := int32(-1)
		for _, t := range existingHosts {
			if !s.filterPasses(g, t) {
				continue
			}
			if c := getIdx(g.hostCounts, t.idx); min < 0 || c < min {
				min = c
			}
		}
		if min < 0 {
			return 0
		}
		return min
	}
	if int32(len(g.universe)) < g.minDom {
		return 0
	}
	min := int32(-1)
	for _, d := range g.universe {
		if c := g.counts[d]; min < 0 || c < min {
			min = c
		}
	}
	if min < 0 {
		return 0
	}
	return min
}

// namespaceSet resolves an affinity term's namespaces: the listed ones, plus those the
// namespaceSelector matches; neither set means the pod's own namespace; an empty selector
// means all namespaces.
func namespaceSet(pod *corev1.Pod, term *corev1.PodAffinityTerm, nsLabels map[string]map[string]string) (all bool, set map[string]bool, err error) {
	set = map[string]bool{}
	for _, n := range term.Namespaces {
		set[n] = true
	}
	if term.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return false, nil, err
		}
		if sel.Empty() {
			return true, nil, nil
		}
		names := make([]string, 0, len(nsLabels))
		for n := range nsLabels {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if sel.Matches(labels.Set(nsLabels[n])) {
				set[n] = true
			}
		}
	} else if len(term.Namespaces) == 0 {
		set[pod.Namespace] = true
	}
	return false, set, nil
}

func nsIdentity(all bool, set map[string]bool) string {
	if all {
		return "*"
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// selectorWithMatchLabelKeys adds, for each matchLabelKeys entry, the pod's own value of that
// label to the selector (keys the pod lacks are ignored, as the API server does).
func selectorWithMatchLabelKeys(pod *corev1.Pod, sel *metav1.LabelSelector, keys []string) (labels.Selector, error) {
	if sel == nil {
		return labels.Nothing(), nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		v, ok := pod.Labels[k]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(k, "=", []string{v})
		if err != nil {
			return nil, err
		}
		s = s.Add(*r)
	}
	return s, nil
}

func affinitySelector(pod *corev1.Pod, term *corev1.PodAffinityTerm) (labels.Selector, error) {
	if term.LabelSelector == nil {
		return labels.Nothing(), nil
	}
	s, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, k := range term.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "=", []string{v})
			if err != nil {
				return nil, err
			}
			s = s.Add(*r)
		}
	}
	for _, k := range term.MismatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "!=", []string{v})
			if err != nil {
				return nil, err
			}
			s = s.Add(*r)
		}
	}
	return s, nil
}

// selectorKey renders a label selector (plus the pod's values for matchLabelKeys and
// mismatchLabelKeys) canonically without parsing it; parsing and validating happen once per
// group, not once per pod.
func selectorKey(pod *corev1.Pod, ls *metav1.LabelSelector, matchKeys, mismatchKeys []string) string {
	if ls == nil {
		return "<none>"
	}
	parts := make([]string, 0, len(ls.MatchLabels)+len(ls.MatchExpressions)+len(matchKeys)+len(mismatchKeys))
	for k, v := range ls.MatchLabels {
		parts = append(parts, k+"="+v)
	}
	for _, e := range ls.MatchExpressions {
		vals := append([]string(nil), e.Values...)
		sort.Strings(vals)
		parts = append(parts, e.Key+" "+string(e.Operator)+" ("+strings.Join(vals, ",")+")")
	}
	for _, k := range matchKeys {
		if v, ok := pod.Labels[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	for _, k := range mismatchKeys {
		if v, ok := pod.Labels[k]; ok {
			parts = append(parts, k+"!="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// appendSelectorKey appends selectorKey's rendering; a lone matchLabels pair (the common
// selector) is written directly.
func appendSelectorKey(b []byte, pod *corev1.Pod, ls *metav1.LabelSelector, matchKeys, mismatchKeys []string) []byte {
	if ls != nil && len(ls.MatchLabels) == 1 && len(ls.MatchExpressions) == 0 && len(matchKeys) == 0 && len(mismatchKeys) == 0 {
		for k, v := range ls.MatchLabels {
			b = append(b, k...)
			b = append(b, '=')
			b = append(b, v...)
		}
		return b
	}
	return append(b, selectorKey(pod, ls, matchKeys, mismatchKeys)...)
}

// spreadGroup returns (creating on first use) the group of a topology spread constraint.
func (s *solver) spreadGroup(pod *corev1.Pod, tsc *corev1.TopologySpreadConstraint, podReqs Requirements, tolerations []corev1.Toleration) (*topoGroup, error) {
	minDom := int32(1)
	if tsc.MinDomains != nil {
		minDom = *tsc.MinDomains
	}
	var f *nodeFilter
	honorAffinity := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	var fid string
	if (honorAffinity && podReqs.Len() > 0) || honorTaints {
		f = &nodeFilter{honorTaints: honorTaints}
		if honorAffinity {
			f.reqs = podReqs
		}
		if honorTaints {
			f.tolerations = tolerations
		}
		fid = f.reqs.String() + "|" + fmt.Sprint(honorTaints, tolerations)
	}
	// The identity is built in a reused buffer: looking up an existing group (every pod but
	// the first of each constraint) allocates nothing.
	b := append(s.keyBuf[:0], "spread|"...)
	b = append(b, tsc.TopologyKey...)
	b = append(b, '|')
	b = append(b, pod.Namespace...)
	b = append(b, '|')
	b = appendSelectorKey(b, pod, tsc.LabelSelector, tsc.MatchLabelKeys, nil)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(tsc.MaxSkew), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(minDom), 10)
	b = append(b, '|')
	b = append(b, fid...)
	s.keyBuf = b
	id := b
	return s.group(id, func() (*topoGroup, error) {
		g := s.newGroup()
		*g = topoGroup{kind: kindSpread, key: tsc.TopologyKey, ns: map[string]bool{pod.Namespace: true}, maxSkew: tsc.MaxSkew, minDom: minDom, filter: f}
		if len(tsc.MatchLabelKeys) == 0 && g.simpleSelector(tsc.LabelSelector) {
			return g, nil
		}
		sel, err := selectorWithMatchLabelKeys(pod, tsc.LabelSelector, tsc.MatchLabelKeys)
		if err != nil {
			return nil, err
		}
		g.selector = sel
		return g, nil
	})
}

// affinityGroup returns the group of a pod (anti-)affinity term.
func (s *solver) affinityGroup(pod *corev1.Pod, term *corev1.PodAffinityTerm, kind groupKind) (*topoGroup, error) {
	id, err := s.appendAffinityIdentity(s.keyBuf[:0], pod, term, kind)
	s.keyBuf = id
	if err != nil {
		return nil, err
	}
	return s.group(id, func() (*topoGroup, error) {
		all, set, err := namespaceSet(pod, term, s.in.Namespaces)
		if err != nil {
			return nil, err
		}
		g := s.newGroup()
		*g = topoGroup{kind: kind, key: term.TopologyKey, allNS: all, ns: set}
		if len(term.MatchLabelKeys) == 0 && len(term.MismatchLabelKeys) == 0 && g.simpleSelector(term.LabelSelector) {
			return g, nil
		}
		sel, err := affinitySelector(pod, term)
		if err != nil {
			return nil, err
		}
		g.selector = sel
		return g, nil
	})
}

func (s *solver) affinityIdentity(pod *corev1.Pod, term *corev1.PodAffinityTerm, kind groupKind) (string, error) {
	b, err := s.appendAffinityIdentity(s.idBuf[:0], pod, term, kind)
	s.idBuf = b
	if err != nil {
		return string(b), err
	}
	// Pods of one workload name the same identity: keep one copy of the string.
	if id, ok := s.idIntern[string(b)]; ok {
		return id, nil
	}
	if s.idIntern == nil {
		s.idIntern = map[string]string{}
	}
	id := string(b)
	s.idIntern[id] = id
	return id, nil
}

// appendAffinityIdentity appends the identity of an affinity term's group: kind, key,
// namespaces and selector. A term naming no namespaces means the pod's own, without building
// the namespace set.
func (s *solver) appendAffinityIdentity(b []byte, pod *corev1.Pod, term *corev1.PodAffinityTerm, kind groupKind) ([]byte, error) {
	b = strconv.AppendInt(b, int64(kind), 10)
	b = append(b, '|')
	b = append(b, term.TopologyKey...)
	b = append(b, '|')
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		b = append(b, pod.Namespace...)
	} else {
		all, set, err := namespaceSet(pod, term, s.in.Namespaces)
		if err != nil {
			return b, err
		}
		b = append(b, nsIdentity(all, set)...)
	}
	b = append(b, '|')
	return appendSelectorKey(b, pod, term.LabelSelector, term.MatchLabelKeys, term.MismatchLabelKeys), nil
}

// repelling lists the terms by which a pod, once placed, keeps other pods away: its required
// anti-affinity (the kube-scheduler applies it in both directions). It is the one constraint a
// bound pod imposes on pods placed after it.
func repelling(pod *corev1.Pod) []corev1.PodAffinityTerm {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// ownedAntiIdentities lists the identities of a pod's required anti-affinity terms: the groups
// in which it is an "owner" that repels matching pods (the inverse direction).
func (s *solver) ownedAntiIdentities(pod *corev1.Pod) []string {
	if len(repelling(pod)) == 0 {
		return nil // most pods: no map lookup
	}
	if ids, ok := s.ownedAnti[pod]; ok {
		return ids
	}
	ids := s.antiIdentities(pod)
	s.ownedAnti[pod] = ids
	return ids
}

// ownedOf is antiIdentities of the attempt's pod, read from the groups its compile found for
// its required anti-affinity terms (appendTopologyGroups lists them after the spread and
// required affinity groups) rather than rendering every term's identity again.
func (s *solver) ownedOf(a *attempt) []string {
	p := a.p
	terms := repelling(p.pod)
	off := len(p.tscs)
	if p.affine {
		off += len(p.pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if off+len(terms) > len(a.own) {
		return s.antiIdentities(p.pod)
	}
	own := a.own[off : off+len(terms)]
	for i := range own {
		if g := own[i].g; g.kind != kindAnti || g.key != terms[i].TopologyKey {
			return s.antiIdentities(p.pod)
		}
	}
	if len(own) == 1 {
		// Pods of one workload share a read-only list.
		g := own[0].g
		if g.ownedIDs == nil {
			g.ownedIDs = []string{g.identity}
		}
		return g.ownedIDs
	}
	ids := make([]string, len(own))
	for i := range own {
		ids[i] = own[i].g.identity
	}
	return ids
}

// antiIdentities computes ownedAntiIdentities (pods of one workload share a read-only list).
func (s *solver) antiIdentities(pod *corev1.Pod) []string {
	var ids []string
	terms := repelling(pod)
	if len(terms) == 1 {
		// The common case, one term: pods of one workload share a read-only list.
		if id, err := s.affinityIdentity(pod, &terms[0], kindAnti); err == nil {
			if ids = s.oneAnti[id]; ids == nil {
				if s.oneAnti == nil {
					s.oneAnti = map[string][]string{}
				}
				ids = []string{id}
				s.oneAnti[id] = ids
			}
		}
		return ids
	}
	for i := range terms {
		id, err := s.affinityIdentity(pod, &terms[i], kindAnti)
		if err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// group finds or creates a group. A new group is counted over every pod already on a target
// (bound or placed earlier in this solve), so groups can appear lazily, e.g. after relaxation.
func (s *solver) group(key []byte, mk func() (*topoGroup, error)) (*topoGroup, error) {
	if g, ok := s.groupsByID[string(key)]; ok {
		return g, nil
	}
	id := string(key)
	g, err := mk()
	if err != nil {
		return nil, err
	}
	g.id = len(s.groups)
	g.identity = id
	g.compileSelector()
	g.hostname = g.key == LabelHostname
	g.counts = map[string]int32{}
	g.owners = map[string]int32{}
	if !g.allNS && len(g.ns) == 1 {
		for n := range g.ns {
			g.oneNS = n
		}
	}
	s.groups = append(s.groups, g)
	s.groupIdx.add(g)
	s.groupsByID[id] = g
	if !g.hostname {
		g.universe = s.universe(g)
	}
	s.countExisting(g)
	return g, nil
}

// recordInGroup counts pod p on target t in g (as a matching pod and/or as an owner).
func (s *solver) recordInGroup(g *topoGroup, p *corev1.Pod, t *target) {
	var owned []string
	if g.kind == kindAnti {
		owned = s.ownedAntiIdentities(p)
	}
	s.record(g, p, t, g.matches(p), owned)
}

// record is recordInGroup with what the caller knows already: whether g's selector matches p
// and p's owned anti-affinity identities (commit has both from the pod's compiled state, and
// does not read the pod's labels again).
func (s *solver) record(g *topoGroup, p *corev1.Pod, t *target, matches bool, owned []string) {
	owns := false
	if g.kind == kindAnti {
		for _, id := range owned {
			if id == g.identity {
				owns = true
				break
			}
		}
	}
	if !matches && !owns {
		return
	}
	d, ok := s.domainOf(t, g.key)
	if !ok && t.existing == nil {
		d, ok = s.pinTarget(t, g.key, g)
	}
	if !ok {
		return
	}
	if matches && s.filterPasses(g, t) {
		g.total++
		if g.hostname {
			g.hostCounts = s.incIdx(g.hostCounts, t.idx)
		} else {
			g.counts[d]++
		}
	}
	if owns {
		if g.hostname {
			g.hostOwners = s.incIdx(g.hostOwners, t.idx)
		} else {
			g.owners[d]++
		}
	}
}

// filterPasses applies a spread constraint's node inclusion policies to a target.
func (s *solver) filterPasses(g *topoGroup, t *target) bool {
	if g.filter == nil {
		return true
	}
	if t.existing != nil {
		return s.existingFilterPasses(g.filter, t) // per node shape (existingset.go)
	}
	if g.filter.reqs.Len() > 0 {
		if t.reqs.Compatible(g.filter.reqs, t.pool.knownFn) != nil {
			return false
		}
	}
	if g.filter.honorTaints && ToleratesTaints(g.filter.tolerations, t.taints, false) != nil {
		return false
	}
	return true
}

// universe lists the domains of g's key that could exist: those existing nodes carry and
// those any NodePool (passing g's node filter) could launch.
func (s *solver) universe(g *topoGroup) []string {
	set := map[string]bool{}
	s.existingDomains(g, set) // existing.go
	for _, p := range s.pools {
		if g.filter != nil {
			if g.filter.reqs.Len() > 0 && p.baseReqs.Compatible(g.filter.reqs, p.knownFn) != nil {
				continue
			}
			if g.filter.honorTaints && ToleratesTaints(g.filter.tolerations, p.np.Taints, false) != nil {
				continue
			}
		}
		for _, d := range s.poolDomains(p, g.key) {
			if g.filter != nil && g.filter.reqs.Len() > 0 && !g.filter.reqs.Has(g.key, d) {
				continue
			}
			set[d] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// poolDomains lists the values of key a NodePool could give a new node: zones and capacity
// types of available offerings, otherwise values instance types or the pool itself define.
func (s *solver) poolDomains(p *poolState, key string) []string {
	if d, ok := p.domains[key]; ok {
		return d
	}
	// The pool's domains depend on its base types and offerings only (in the memo's entry key).
	memo := p.memo()
	if memo != nil {
		if d, ok := memoGet(memo, &memo.domains, key); ok {
			p.domains[key] = d
			return d
		}
	}
	var set domainSet
	base, baseHas := p.baseReqs.Get(key)
	compat := s.compatible(p, p.baseID)
	for i, it := range p.its {
		if !compat.has(i) {
			continue
		}
		switch key {
		case LabelZone, LabelCapacityType:
			for oi := range it.Offerings {
				o := &it.Offerings[oi]
				if !o.Launchable() {
					continue
				}
				v := o.Zone
				if key == LabelCapacityType {
					v = o.CapacityType
				}
				set.add(v)
			}
		default:
			if r, ok := it.Requirements.Get(key); ok && !r.complement {
				for _, v := range r.values {
					set.add(v)
				}
			}
		}
	}
	if baseHas && !base.complement {
		for _, v := range base.values {
			set.add(v)
		}
	}
	out := make([]string, 0, set.len())
	set.each(func(v string) {
		if !baseHas || base.Has(v) {
			out = append(out, v)
		}
	})
	sort.Strings(out)
	p.domains[key] = out
	if memo != nil {
		memoPut(memo, &memo.domains, key, out, 16*len(out))
	}
	return out
}

// domainSet collects distinct strings: a pool's domains of a key are few (zones, capacity types)
// and met thousands of times (once per offering), so a short list scanned (last value first)
// beats a map until it grows.
type domainSet struct {
	list []string
	m    map[string]bool
}

func (vs *domainSet) add(v string) {
	if vs.m != nil {
		vs.m[v] = true
		return
	}
	for i := len(vs.list) - 1; i >= 0; i-- {
		if vs.list[i] == v {
			return
		}
	}
	if len(vs.list) < 32 {
		vs.list = append(vs.list, v)
		return
	}
	vs.m = make(map[string]bool, 2*len(vs.list))
	for _, x := range vs.list {
		vs.m[x] = true
	}
	vs.m[v] = true
}

func (vs *domainSet) len() int {
	if vs.m != nil {
		return len(vs.m)
	}
	return len(vs.list)
}

func (vs *domainSet) each(f func(string)) {
	if vs.m != nil {
		for v := range vs.m {
			f(v)
		}
		return
	}
	for _, v := range vs.list {
		f(v)
	}
}

// domainOf is a target's domain for a topology key, if decided.
func (s *solver) domainOf(t *target, key string) (string, bool) {
	if key == LabelHostname {
		return t.hostname, true
	}
	if t.existing != nil {
		return existingDomain(t, key)
	}
	r, ok := t.reqs.Get(key)
	if !ok {
		return "", false
	}
	return r.Single()
}

// topologyError explains a topology constraint that no domain of a target can satisfy.
type topologyError struct {
	g *topoGroup
}

// rejection is the group's topologyError, allocated on first use and shared: the solver's hot
// path rejects targets by the thousand and reads none of these errors but the last.
func (g *topoGroup) rejection() *topologyError {
	if g.err == nil {
		g.err = &topologyError{g: g}
	}
	return g.err
}

func (e *topologyError) Error() string {
	switch e.g.kind {
	case kindSpread:
		return "would violate topology spread constraint on " + e.g.key + " (maxSkew " + strconv.Itoa(int(e.g.maxSkew)) + ", selector " + e.g.sel().String() + ")"
	case kindAffinity:
		return "no " + e.g.key + " domain with pods matching pod affinity selector " + e.g.sel().String()
	}
	return "every " + e.g.key + " domain already has pods matching pod anti-affinity selector " + e.g.sel().String()
}
