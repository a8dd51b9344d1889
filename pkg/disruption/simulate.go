package disruption

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The simulation answers "where would these pods go if these nodes went away?"
// with the solver the provisioner uses (scheduling.Solve), so consolidation
// never assumes a placement provisioning would not make. Solving against every
// node of a large cluster costs tens to hundreds of milliseconds, and a pass may
// ask the question for thousands of candidates, so each question is first
// answered by the packer (pack.go), whose placement picks the nodes the solver
// needs to see:
//
//   - Pods without topology constraints land, in the solver, on the first node
//     in name order that fits them. Those nodes are the ones the packer used,
//     so the solver runs on those alone (plus the capacity still starting,
//     which it tries after them) and its answer is the one it would give on the
//     whole cluster.
//   - Pods with topology constraints (spread, pod affinity or anti-affinity,
//     required or preferred while in force) depend on pods elsewhere. The
//     solver then also sees every node hosting a pod one of their constraints
//     counts, one node of every label-and-taint shape (so every topology domain
//     stays known), and every node hosting a pod whose required anti-affinity
//     spans more than its own node (it repels pods from a whole zone). Nodes
//     left out hold no pod any of these constraints counts; the solver's skew
//     minimum for hostname spread is zero whenever a NodePool can launch, so
//     hosts left out change no count it reads. Without a NodePool every node is
//     used.
//
// Because the packer reads every constraint through scheduling.Placement
// (pack.go), a constraint taught to the solver is respected by both.
// TestFastPathNeverAcceptsWhatTheSolverRejects checks the whole argument on
// random clusters against a solve over every node.

// simulation is the answer to one "what if these nodes went away" question.
type simulation struct {
	// ok: every pod of the candidates has a place.
	ok bool
	// err names the first pod without one.
	err error
	// replacements are the new claims holding candidates' pods.
	replacements []*scheduling.NewClaim
	// placed is where the solver put pods on existing nodes.
	placed []scheduling.ExistingPlacement
	// shown counts the existing nodes the solver saw.
	shown int
	// moving are the candidates' pods the solver placed, in its input order.
	moving []*corev1.Pod
}

// prune, when set, lets simulate answer no without solving: it receives the
// candidates' pods that the packer could not place on other nodes and returns
// why no acceptable replacement could hold them ("" to go on).
type prune func(pods []*podReq) string

// simulate asks the solver where the candidates' pods go when the candidates
// are gone (pending pods compete for the same room). It returns nil and a
// reason when the packer already knows the answer is no.
func (p *pass) simulate(cands []*node, pr prune) (*simulation, string) {
	// A pod the solver refuses whatever the nodes keeps its candidate: the
	// solver's answer, known without packing or solving.
	for _, c := range cands {
		if pod := c.refused; pod != nil {
			return &simulation{err: fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, scheduling.DRAError{})}, ""
		}
	}
	packed := p.packWithout(cands)
	if len(packed.moving) == 0 {
		return &simulation{ok: true}, ""
	}
	excluded, isMoving, reqs, sens := packed.excluded, packed.moving, packed.reqs, packed.sensitive
	moving := packed.movingPods
	if pr != nil {
		var left []*podReq
		for _, u := range packed.unplaced {
			if isMoving[u.pod] {
				left = append(left, u)
			}
		}
		if len(left) > 0 {
			if why := pr(left); why != "" {
				return nil, why
			}
		}
	}
	if parts := p.partition(packed); parts != nil {
		p.res.PartitionedSimulations++
		if sens {
			// Every part's constraints in one walk over the cluster's pods.
			p.findMatching(constraintsOf(reqs))
		}
		var results []*scheduling.Results
		shown := 0
		for _, pt := range parts {
			if len(pt.moving) == 0 {
				continue // pending pods the moving ones never meet
			}
			p.res.Simulations++
			// Every part shows what the whole would (relevant when any pod is
			// sensitive): the narrowing stays the one the property test checks.
			var pending []*corev1.Pod
			for _, r := range pt.reqs {
				if !isMoving[r.pod] {
					pending = append(pending, r.pod)
				}
			}
			existing := p.withoutRoomWhereUnusable(p.shown(excluded, p.partUses(pt, packed.used), pt.reqs, sens), pt)
			shown += len(existing)
			results = append(results, p.solvePods(pt.moving, pending, existing))
		}
		return readSimulation(moving, results, shown), ""
	}
	return p.solve(moving, p.shown(excluded, packed.used, reqs, sens)), ""
}

// shown lists the existing nodes a solve of these pods must see (see the top
// of this file): the nodes the packer used and, for pods whose placement
// depends on others, what relevant adds.
func (p *pass) shown(excluded map[*node]bool, used []int, reqs []*podReq, sens bool) []*scheduling.ExistingNode {
	if sens {
		return p.relevant(excluded, used, reqs)
	}
	pk := p.packer()
	var existing []*scheduling.ExistingNode
	for _, ti := range used {
		existing = append(existing, pk.targets[ti].n.Existing)
	}
	// Capacity still starting is tried by the solver after the initialized
	// nodes, and a pod it lands on there may not rely on it: shown so that
	// the answer is the whole cluster's.
	for _, n := range pk.starting {
		if !excluded[n] {
			existing = append(existing, n.Existing)
		}
	}
	return existing
}

// solve asks the solver where the moving pods (and the pending ones) go on the
// given existing nodes, and reads its answer for the moving pods.
func (p *pass) solve(moving []*corev1.Pod, existing []*scheduling.ExistingNode) *simulation {
	p.res.Simulations++
	return readSimulation(moving, []*scheduling.Results{p.solvePods(moving, p.pending, existing)}, len(existing))
}

// solvePods runs the solver on the moving and pending pods and the existing
// nodes, counting its work.
func (p *pass) solvePods(moving, pending []*corev1.Pod, existing []*scheduling.ExistingNode) *scheduling.Results {
	in := *p.in.Scheduling
	in.Pods = append(append(make([]*corev1.Pod, 0, len(moving)+len(pending)), moving...), pending...)
	in.ExistingNodes = existing
	in.Cache = p.cache
	in.Options.Repack = p.repacking
	if p.credit != "" {
		in.NodePools = creditedPools(in.NodePools, p.credit)
	}
	work := len(in.Pods)
	for _, e := range existing {
		work += 1 + len(e.Pods)
	}
	p.res.SimulationWork += work
	return scheduling.Solve(&in)
}

// readSimulation reads the solves' answer (one, or one per part) for the
// moving pods, in their order.
func readSimulation(moving []*corev1.Pod, results []*scheduling.Results, shown int) *simulation {
	isMoving := make(map[*corev1.Pod]bool, len(moving))
	for _, pod := range moving {
		isMoving[pod] = true
	}
	sim := &simulation{ok: true, shown: shown, moving: moving}
	for _, pod := range moving {
		for _, r := range results {
			if err, failed := r.PodErrors[pod]; failed {
				sim.ok = false
				sim.err = fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
				return sim
			}
		}
	}
	// Starting nodes in the solver's order (by name), whichever solve used
	// them: a node takes pods of one part only.
	var starting []scheduling.ExistingPlacement
	for _, r := range results {
		for _, pl := range r.ExistingNodes {
			if !pl.Node.Initialized || pl.Node.InFlight {
				starting = append(starting, pl)
			}
		}
	}
	if len(results) > 1 {
		sort.SliceStable(starting, func(i, j int) bool { return starting[i].Node.Name < starting[j].Node.Name })
	}
	{
		for _, pl := range starting {
			for _, pod := range pl.Pods {
				if isMoving[pod] {
					sim.ok = false
					sim.err = fmt.Errorf("pod %s/%s would rely on node %s, which is not initialized yet", pod.Namespace, pod.Name, pl.Node.Name)
					return sim
				}
			}
		}
	}
	for _, r := range results {
		for _, c := range r.NewClaims {
			for _, pod := range c.Pods {
				if isMoving[pod] {
					sim.replacements = append(sim.replacements, c)
					break
				}
			}
		}
		sim.placed = append(sim.placed, r.ExistingNodes...)
	}
	return sim
}

// relevant lists the nodes a simulation of sensitive pods must show the solver
// (see the top of this file), in name order.
func (p *pass) relevant(excluded map[*node]bool, used []int, pods []*podReq) []*scheduling.ExistingNode {
	pk := p.packer()
	in := map[*node]bool{}
	add := func(n *node) {
		if n.Existing != nil && !excluded[n] && !n.Deleting && !n.MarkedForDeletion {
			in[n] = true
		}
	}
	all := len(p.in.Scheduling.NodePools) == 0
	cs := constraintsOf(pods)
	p.findMatching(cs)
	for _, c := range cs {
		for _, n := range p.matching[c.ID()] {
			add(n)
		}
	}
	var out []*scheduling.ExistingNode
	if all {
		for _, n := range p.nodes {
			add(n)
		}
	} else {
		for _, ti := range used {
			add(pk.targets[ti].n)
		}
		for _, n := range p.zonalOwners {
			add(n)
		}
		// One node of every shape keeps every domain known, and capacity that
		// is not a packer target (starting, in flight) is few and shown as is.
		seen := map[int]bool{}
		for _, n := range p.nodes {
			ti, ok := pk.byNode[n]
			if !ok {
				add(n)
				continue
			}
			if excluded[n] {
				continue
			}
			t := pk.targets[ti]
			pk.ensure(t)
			if !seen[t.shape] {
				seen[t.shape] = true
				add(n)
			}
		}
	}
	for _, n := range p.nodes {
		if in[n] {
			out = append(out, n.Existing)
		}
	}
	return out
}

// constraintsOf lists the pods' topology constraints, each once: pods of one
// deployment share theirs, and the nodes of a constraint would otherwise be
// visited once per moving pod.
func constraintsOf(pods []*podReq) []*scheduling.TopologyConstraint {
	seen := map[string]bool{}
	var cs []*scheduling.TopologyConstraint
	for _, pr := range pods {
		for _, c := range pr.pp.Topology() {
			if seen[c.ID()] {
				continue
			}
			seen[c.ID()] = true
			cs = append(cs, c)
		}
	}
	return cs
}

// findMatching lists, for each constraint not seen before in this pass, the
// nodes hosting an active pod the constraint counts (in p.matching). The
// constraints new to the pass are read in one walk over the cluster's pods: a
// walk per constraint touches a million pods each time at 100,000 nodes.
// Whether a constraint counts a pod depends on the pod's namespace and labels
// alone, and the pods of a deployment share them: each distinct namespace and
// label set is checked against the constraints once (labelSets).
func (p *pass) findMatching(cs []*scheduling.TopologyConstraint) {
	var todo []*scheduling.TopologyConstraint
	for _, c := range cs {
		if _, ok := p.matching[c.ID()]; !ok {
			p.matching[c.ID()] = nil
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return
	}
	out := make([][]*node, len(todo))
	ls := newLabelSets(todo)
	found := make([]bool, len(todo))
	for _, n := range p.nodes {
		clear(found)
		for _, pod := range n.Pods() {
			if !active(pod) {
				continue
			}
			for i, ok := range ls.counted(pod) {
				if ok && !found[i] {
					found[i] = true
					out[i] = append(out[i], n)
				}
			}
		}
	}
	for i, c := range todo {
		p.matching[c.ID()] = out[i]
	}
}

// labelSets memoizes which of some constraints count a pod, by the pod's
// namespace and labels (up to maxMemoLabels of them; pods with more are
// checked directly).
type labelSets struct {
	cs   []*scheduling.TopologyConstraint
	memo map[string][]bool
	buf  []byte
	tmp  []bool
}

const maxMemoLabels = 8

// maxMemo bounds the label sets remembered (pods of StatefulSets carry a label
// of their own name, so each is a set of its own).
const maxMemo = 1 << 16

func newLabelSets(cs []*scheduling.TopologyConstraint) *labelSets {
	return &labelSets{cs: cs, memo: map[string][]bool{}, tmp: make([]bool, len(cs))}
}

// counted returns, per constraint, whether it counts the pod; the slice is
// valid until the next call.
func (ls *labelSets) counted(pod *corev1.Pod) []bool {
	if len(pod.Labels) > maxMemoLabels {
		for i, c := range ls.cs {
			ls.tmp[i] = c.Counts(pod)
		}
		return ls.tmp
	}
	var stack [maxMemoLabels]string
	keys := stack[:0]
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	// Insertion sort: a handful of keys.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	b := append(ls.buf[:0], pod.Namespace...)
	for _, k := range keys {
		b = append(b, 0)
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, pod.Labels[k]...)
	}
	ls.buf = b
	if r, ok := ls.memo[string(b)]; ok {
		return r
	}
	r := make([]bool, len(ls.cs))
	for i, c := range ls.cs {
		r[i] = c.Counts(pod)
	}
	if len(ls.memo) < maxMemo {
		ls.memo[string(b)] = r
	}
	return r
}
