package scheduling

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Bound is a floor under the $/h of any set of new nodes that holds some
// pods: no placement, by any solver, launches for less.
type Bound struct {
	// PricePerHour is the optimum of the linear program (see LowerBound).
	PricePerHour float64
	// Nodes is how many nodes the optimum buys, fractions counted.
	Nodes float64
	// Mix is the optimum's instance types (pool/type) and their fractional
	// counts, largest first.
	Mix []BoundShare
}

// BoundShare is one instance type of a bound's optimum.
type BoundShare struct {
	NodePool, InstanceType string
	Count, PricePerHour    float64
}

// LowerBound is the linear-programming relaxation of "which nodes to buy" for
// the input's pods: over every instance type a NodePool of the input admits
// (with an offering its requirements allow, priced at the cheapest such
// offering), non-negative and fractional counts whose capacity covers the
// pods' total requests of every resource (cpu, memory, pods, each extended
// resource), at the least $/h. What it adds, each true of any placement:
//   - a node's capacity is net of the DaemonSet pods a node of that pool and
//     type runs (their requests and a pod slot each), as the solver counts it;
//   - pods go only to the pools they tolerate and whose labels their node
//     selector and required node affinity admit: the pools fall into groups
//     no pod spans, each group is its own program, and the bound is their sum;
//     within a group, for each set of pools some pods are limited to, the
//     nodes of those pools cover (per resource) every pod limited to them;
//   - at least as many nodes, in a group, as the largest set of its pods that
//     require, by anti-affinity on the hostname, a node each, and at least,
//     for each such set, the sum over its pods of the cheapest type that holds
//     each (under PreferencePolicy Respect, in pools whose limits leave room
//     for a node per pod, preferred terms count too: a new node always honours
//     them, so the solver does);
//   - a pod sits on a type whose allocatable holds each of its requests: the
//     pods requesting at least v of a resource are covered by the types with
//     at least v of it (size cuts, up to sizeCutsPer values per resource).
//
// What it leaves out makes it lower, never higher: every other constraint of
// the pods (pod affinity, spread, instance-type requirements within a pool),
// and that a node holds whole pods (beyond the size cuts). Pods no pool admits are left out. Existing
// capacity is not counted: the bound is for launching the input's pods from
// nothing.
func LowerBound(in *Input) (*Bound, error) {
	known := wellKnownSet(in.Options)
	wellKnown := func(k string) bool { return known[k] }
	pools := in.NodePools
	poolReqs := make([]Requirements, len(pools))
	for i, np := range pools {
		poolReqs[i] = poolRequirements(np)
	}
	// The pools each pod may use; pools joined by a pod that may use both.
	parent := make([]int, len(pools))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := make([]int, len(in.Pods)) // a pool the pod may use, -1 for none
	allowed := make([][]int, len(in.Pods))
	for pi, p := range in.Pods {
		first[pi] = -1
		for i, np := range pools {
			if !TaintsTolerated(p.Spec.Tolerations, np.Taints, false) || !daemonCompatible(p, poolReqs[i], wellKnown) {
				continue
			}
			allowed[pi] = append(allowed[pi], i)
			if first[pi] < 0 {
				first[pi] = i
			} else {
				parent[find(i)] = find(first[pi])
			}
		}
	}
	out := &Bound{}
	for root := range pools {
		if find(root) != root {
			continue
		}
		var pods []*corev1.Pod
		var podPools [][]int
		for pi, p := range in.Pods {
			if first[pi] >= 0 && find(first[pi]) == root {
				pods = append(pods, p)
				podPools = append(podPools, allowed[pi])
			}
		}
		if len(pods) == 0 {
			continue
		}
		var group []int
		for i := range pools {
			if find(i) == root {
				group = append(group, i)
			}
		}
		// Preferred hostname anti-affinity counts as required where the solver honours it:
		// under Respect, in pools whose limits leave room for a node per pod (of any type),
		// where it may always open a node.
		preferred := in.Options.PreferencePolicy != PreferencePolicyIgnore
		for _, pi := range group {
			if !roomForNodes(pools[pi], len(pods)) {
				preferred = false
			}
		}
		b, err := groupBound(pods, podPools, pools, poolReqs, group, in.DaemonSetPods, wellKnown, preferred)
		if err != nil {
			return nil, err
		}
		out.PricePerHour += b.PricePerHour
		out.Nodes += b.Nodes
		out.Mix = append(out.Mix, b.Mix...)
	}
	sort.SliceStable(out.Mix, func(i, j int) bool { return out.Mix[i].Count > out.Mix[j].Count })
	return out, nil
}

// sizeCutsPer is the most size cuts per resource the lower bound adds (see groupBound).
const sizeCutsPer = 12

// errNoAdmittedType: no pool of a group admits an instance type with an available offering.
var errNoAdmittedType = errors.New("no NodePool admits an instance type with an available offering")

// groupBound is the covering program of a group of pools and the pods that may use them
// (podPools: the pools each pod may use).
func groupBound(pods []*corev1.Pod, podPools [][]int, pools []*NodePool, poolReqs []Requirements, group []int, daemonSet []*corev1.Pod, wellKnown func(string) bool, preferred bool) (*Bound, error) {
	demand := corev1.ResourceList{}
	members := map[string][]int{} // the pods of each anti-affinity group, by position in pods
	podReqs := make([]corev1.ResourceList, len(pods))
	// The sets of pools some pods are limited to (fewer than the group's), in
	// the order met, with those pods' requests and count.
	type poolSet struct {
		in     map[int]bool
		demand corev1.ResourceList
		pods   float64
	}
	var sets []*poolSet
	setOf := map[string]*poolSet{}
	for qi, p := range pods {
		reqs := podRequests(p)
		podReqs[qi] = reqs
		addList(demand, reqs)
		for _, key := range hostnameAntiAffinityGroups(p, preferred) {
			members[key] = append(members[key], qi)
		}
		if pp := podPools[qi]; len(pp) < len(group) {
			key := fmt.Sprint(pp)
			ps := setOf[key]
			if ps == nil {
				ps = &poolSet{in: map[int]bool{}, demand: corev1.ResourceList{}}
				for _, pi := range pp {
					ps.in[pi] = true
				}
				setOf[key] = ps
				sets = append(sets, ps)
			}
			addList(ps.demand, reqs)
			ps.pods++
		}
	}
	demand[corev1.ResourcePods] = *resource.NewQuantity(int64(len(pods)), resource.DecimalSI)
	names := make([]corev1.ResourceName, 0, len(demand))
	for n, q := range demand {
		if q.Sign() > 0 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	minNodes := 0
	for _, qs := range members {
		minNodes = max(minNodes, len(qs))
	}
	if len(names) == 0 && minNodes == 0 {
		return &Bound{}, nil
	}
	type column struct {
		pool, it string
		pi       int // the pool's index
		price    float64
		cap      []float64
	}
	var cols []column
	for _, pi := range group {
		np := pools[pi]
		reqs, admitted := np.admitted()
		oc := newOfferingCheck(reqs)
		var daemons []*corev1.Pod
		for _, d := range daemonSet {
			if TaintsTolerated(d.Spec.Tolerations, np.Taints, false) {
				daemons = append(daemons, d)
			}
		}
		for _, it := range admitted {
			price := math.Inf(1)
			for oi := range it.Offerings {
				if o := &it.Offerings[oi]; oc.compatible(o) && o.Price < price {
					price = o.Price
				}
			}
			alloc := it.Allocatable()
			if len(daemons) > 0 {
				node := typeNodeRequirements(poolReqs[pi], it)
				for _, d := range daemons {
					if !daemonCompatible(d, node, wellKnown) {
						continue
					}
					for n, q := range podRequests(d) {
						if cur, ok := alloc[n]; ok {
							cur.Sub(q)
							alloc[n] = cur
						}
					}
					if cur, ok := alloc[corev1.ResourcePods]; ok {
						cur.Sub(*resource.NewQuantity(1, resource.DecimalSI))
						alloc[corev1.ResourcePods] = cur
					}
				}
			}
			c := column{pool: np.Name, it: it.Name, pi: pi, price: price, cap: make([]float64, len(names))}
			for i, n := range names {
				q := alloc[n]
				c.cap[i] = max(0, q.AsApproximateFloat64())
			}
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return nil, errNoAdmittedType
	}
	// Pool cuts: pods limited to some of the group's pools, with every pod
	// limited to a subset of those, are covered by those pools' nodes alone.
	type poolCut struct {
		in     map[int]bool
		demand []float64 // per resource of names
	}
	cuts := make([]poolCut, 0, len(sets))
	for _, set := range sets {
		cut := poolCut{in: set.in, demand: make([]float64, len(names))}
		for _, sub := range sets {
			inside := true
			for pi := range sub.in {
				if !set.in[pi] {
					inside = false
					break
				}
			}
			if !inside {
				continue
			}
			for i, n := range names {
				if n == corev1.ResourcePods {
					cut.demand[i] += sub.pods
				} else if v, ok := sub.demand[n]; ok {
					cut.demand[i] += v.AsApproximateFloat64()
				}
			}
		}
		cuts = append(cuts, cut)
	}
	// Size cuts: a pod sits on a node whose allocatable holds each of its requests, so for a
	// resource s and a value v, the pods requesting at least v of s are covered, in every
	// resource, by the nodes of the types with at least v of s allocatable. One cut per
	// distinct request of each resource (at most sizeCutsPer, spread over the values), where
	// some type has less than v; without them the program buys cpu on types too small for any
	// pod and memory on others.
	reqVecs := make([][]float64, len(pods))
	for qi, reqs := range podReqs {
		v := make([]float64, len(names))
		for i, n := range names {
			if n == corev1.ResourcePods {
				v[i] = 1
			} else if q, ok := reqs[n]; ok {
				v[i] = q.AsApproximateFloat64()
			}
		}
		reqVecs[qi] = v
	}
	type sizeCut struct {
		s      int
		v      float64
		demand []float64
	}
	var sizes []sizeCut
	for si, n := range names {
		if n == corev1.ResourcePods {
			continue
		}
		var vals []float64
		for _, v := range reqVecs {
			if v[si] > 0 {
				vals = append(vals, v[si])
			}
		}
		sort.Float64s(vals)
		vals = slices.Compact(vals)
		if len(vals) > sizeCutsPer {
			picked := make([]float64, 0, sizeCutsPer)
			for k := range sizeCutsPer {
				picked = append(picked, vals[k*(len(vals)-1)/(sizeCutsPer-1)])
			}
			vals = slices.Compact(picked)
		}
		for _, th := range vals {
			short := false
			for _, col := range cols {
				if col.cap[si] < th {
					short = true
					break
				}
			}
			if !short {
				continue
			}
			cut := sizeCut{s: si, v: th, demand: make([]float64, len(names))}
			for _, v := range reqVecs {
				if v[si] >= th {
					for i := range v {
						cut.demand[i] += v[i]
					}
				}
			}
			sizes = append(sizes, cut)
		}
	}
	// Standard form: minimise price·x subject to, per resource r,
	// Σ_t cap[t][r]/demand[r]·x_t − s_r = 1 (and, with a node cut,
	// Σ_t x_t/minNodes − s = 1; per pool cut and resource, the same over the
	// cut's pools and demand), x, s >= 0. Rows scaled by their demand keep
	// the numbers near 1.
	rows := len(names)
	if minNodes > 0 {
		rows++
	}
	cutRow := rows
	for _, cut := range cuts {
		for _, d := range cut.demand {
			if d > 0 {
				rows++
			}
		}
	}
	for _, cut := range sizes {
		for _, d := range cut.demand {
			if d > 0 {
				rows++
			}
		}
	}
	ncols := len(cols) + rows
	a := mat.NewDense(rows, ncols, nil)
	b := make([]float64, rows)
	c := make([]float64, ncols)
	// cover fills row r with resource i of the columns keep admits (nil: all),
	// scaled by the demand d; it reports whether any column has some.
	cover := func(r, i int, d float64, keep func(column) bool) bool {
		covered := false
		for j, col := range cols {
			if v := col.cap[i] / d; v > 0 && (keep == nil || keep(col)) {
				a.Set(r, j, v)
				covered = true
			}
		}
		b[r] = 1
		return covered
	}
	for i, n := range names {
		d := demand[n]
		if !cover(i, i, d.AsApproximateFloat64(), nil) {
			return nil, fmt.Errorf("no admitted instance type has %s", n)
		}
	}
	if minNodes > 0 {
		for j := range cols {
			a.Set(len(names), j, 1/float64(minNodes))
		}
		b[len(names)] = 1
	}
	r := cutRow
	for _, cut := range cuts {
		for i, d := range cut.demand {
			if d <= 0 {
				continue
			}
			if !cover(r, i, d, func(col column) bool { return cut.in[col.pi] }) {
				return nil, fmt.Errorf("no instance type of the pools some pods are limited to has %s", names[i])
			}
			r++
		}
	}
	for _, cut := range sizes {
		for i, d := range cut.demand {
			if d <= 0 {
				continue
			}
			// No type large enough: those pods fit nowhere, and the row would make the
			// program infeasible; the bound leaves them out (b stays 0).
			if !cover(r, i, d, func(col column) bool { return col.cap[cut.s] >= cut.v }) {
				b[r] = 0
			}
			r++
		}
	}
	for r := 0; r < rows; r++ {
		a.Set(r, len(cols)+r, -1)
	}
	for j, col := range cols {
		c[j] = col.price
	}
	opt, x, err := lp.Simplex(c, a, b, 1e-10, nil)
	if err != nil {
		return nil, fmt.Errorf("solving the lower bound: %w", err)
	}
	// Alone cuts: the pods of a hostname anti-affinity group have a node each, so the fleet
	// costs at least, summed over a group's pods, the cheapest type (of the pods' pools,
	// net of their DaemonSets) that holds each. Where every pod must be alone this is the
	// optimum itself; the covering program alone would share nodes out fractionally.
	for _, qs := range members {
		sum := 0.0
		for _, qi := range qs {
			best := math.Inf(1)
			for _, col := range cols {
				if col.price >= best || !slices.Contains(podPools[qi], col.pi) {
					continue
				}
				fits := true
				for i, v := range reqVecs[qi] {
					if v > col.cap[i] {
						fits = false
						break
					}
				}
				if fits {
					best = col.price
				}
			}
			if math.IsInf(best, 1) {
				sum = 0 // a pod no type holds: left out, as the program leaves it
				break
			}
			sum += best
		}
		opt = max(opt, sum)
	}
	out := &Bound{PricePerHour: opt}
	for j, col := range cols {
		if x[j] > 1e-9 {
			out.Nodes += x[j]
			out.Mix = append(out.Mix, BoundShare{NodePool: col.pool, InstanceType: col.it, Count: x[j], PricePerHour: col.price})
		}
	}
	sort.SliceStable(out.Mix, func(i, j int) bool { return out.Mix[i].Count > out.Mix[j].Count })
	return out, nil
}

// roomForNodes reports whether the pool's limits leave room for n more nodes of
// its largest types (a new claim holds the largest capacity of its candidates
// against the limits).
func roomForNodes(np *NodePool, n int) bool {
	for name, q := range np.Remaining {
		if name == "nodes" {
			if q.Value() < int64(n) {
				return false
			}
			continue
		}
		most := 0.0
		for _, it := range np.InstanceTypes {
			if c, ok := it.Capacity[name]; ok {
				most = max(most, c.AsApproximateFloat64())
			}
		}
		if q.AsApproximateFloat64() < float64(n)*most {
			return false
		}
	}
	return true
}

// hostnameAntiAffinityGroups are keys of the groups the pod belongs to whose
// members must each have a node of their own: a required anti-affinity term
// on the hostname whose selector selects the pod itself, and with preferred a
// preferred one too (under PreferencePolicy Respect a new node always honours
// it, so the solver never relaxes it where it may open nodes).
func hostnameAntiAffinityGroups(p *corev1.Pod, preferred bool) []string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	var out []string
	add := func(t *corev1.PodAffinityTerm) {
		if t.TopologyKey != corev1.LabelHostname || t.LabelSelector == nil {
			return
		}
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			return
		}
		if key := p.Namespace + "/" + sel.String(); !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	anti := p.Spec.Affinity.PodAntiAffinity
	for i := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
		add(&anti.RequiredDuringSchedulingIgnoredDuringExecution[i])
	}
	if preferred {
		for i := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
			add(&anti.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	return out
}
