package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

const (
	poolGeneral   = "general"
	poolBatch     = "batch"
	labelNodePool = v1.NodePoolLabelKey
)

// batchTaint keeps the batch pool's nodes for the pods that tolerate it.
var batchTaint = corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}

// start is the simulated time of step 0; step t is t hours later. Nothing in
// the simulation depends on it but budgets' schedules (none) and pod ages.
var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Config of a simulation. Zero fields take the defaults in parentheses.
type Config struct {
	Seed int64
	// Policy is every NodePool's consolidationPolicy.
	Policy v1.ConsolidationPolicy
	// InstanceTypes is the cloud's catalog; the pools use its amd64 types of at
	// most MaxNodeCPU cpus.
	InstanceTypes []*scheduling.InstanceType
	// WellKnownLabels are the solver's (scheduling.DefaultWellKnownLabels plus
	// the provider's).
	WellKnownLabels []string
	// Steps (48) of the demand curve, Period (24) of its wave.
	Steps, Period int
	// Deployments (32), each of 4 to MaxBaseReplicas (30) replicas at its peak
	// before noise and bursts.
	Deployments, MaxBaseReplicas int
	// MaxNodeCPU (16) caps the instance types the pools launch, as users
	// commonly do; it keeps the fleet at tens of nodes, where consolidation
	// has choices to make (the catalog's prices are linear in size, so an
	// uncapped solver would buy a few huge nodes).
	MaxNodeCPU int64
	// MaxPassesPerStep (50) bounds the disruption passes of a step. A pass
	// that decides nothing ends the step first; every decision saves money,
	// so the bound is a guard, not a rate.
	MaxPassesPerStep int
	// Budget is every NodePool's disruption budget (upstream's default, "10%").
	Budget string
	// UpstreamMovesOnly leaves out repack consolidation
	// (disruption.Options.DisableRepackConsolidation).
	UpstreamMovesOnly bool
	// LeastAllocated re-homes a decision's evicted pods as kube-scheduler's
	// default profile tends to, not where the decision's simulation put them:
	// each pod in eviction order, after the replacements are up, onto the node
	// of its pool it fits that is left the emptiest (NodeResourcesFit's
	// LeastAllocated score over cpu and memory; ties to the first by name).
	// Zonally spread pods and pods that fit nowhere are solved again as
	// pending pods, and nodes launched for them count as Relaunched. A
	// decision that only holds when its pods land exactly where it planned
	// shows here as relaunched nodes, and a loop of such decisions as moves
	// repeated step after step.
	LeastAllocated bool
}

func (c *Config) defaults() {
	if c.Steps == 0 {
		c.Steps = 48
	}
	if c.Period == 0 {
		c.Period = 24
	}
	if c.Deployments == 0 {
		c.Deployments = 32
	}
	if c.MaxBaseReplicas == 0 {
		c.MaxBaseReplicas = 30
	}
	if c.MaxNodeCPU == 0 {
		c.MaxNodeCPU = 16
	}
	if c.MaxPassesPerStep == 0 {
		c.MaxPassesPerStep = 50
	}
	if c.Budget == "" {
		c.Budget = "10%"
	}
	if c.Policy == "" {
		c.Policy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	}
}

// Node is one node of the fleet.
type Node struct {
	Name         string
	Pool         string
	InstanceType *scheduling.InstanceType
	Zone         string
	CapacityType string
	// Price of its offering per hour.
	Price       float64
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
	// Pods bound to it, its DaemonSet pod first.
	Pods []*corev1.Pod
	// Launched is the step it was launched in.
	Launched int

	// The objects disruption reads, built once at launch.
	node  *corev1.Node
	claim *v1.NodeClaim
}

// StepReport is what one step did.
type StepReport struct {
	Step int
	// Replicas the Deployments asked for, Pending pods left after the step.
	Replicas, Pending int
	// Nodes and PricePerHour of the fleet at the end of the step.
	Nodes        int
	PricePerHour float64
	// Launched counts nodes provisioning launched for pending pods.
	Launched int
	// Moves are the disruption decisions applied; Disrupted the nodes they
	// removed, Replacements the nodes they launched, Evicted the pods they moved.
	Moves, Disrupted, Replacements, Evicted int
	// Refused counts the moves Balanced scored below its threshold in the
	// step's last pass: moves left undone at the step's end.
	Refused int
	// Relaunched counts nodes launched for evicted pods the re-solve could not
	// place on the fleet: 0 when every decision's simulation held.
	Relaunched int
	// PassesCapped: the step stopped at MaxPassesPerStep with decisions left.
	PassesCapped bool
}

// Report sums a whole run.
type Report struct {
	Steps []StepReport
	// Totals over the steps.
	Moves, Disrupted, Replacements, Evicted, Refused, Launched, Relaunched int
	// MeanPricePerHour is the mean of the steps' end-of-step $/h;
	// FinalPricePerHour the last step's.
	MeanPricePerHour, FinalPricePerHour float64
	// FinalBoundPerHour is scheduling.LowerBound's $/h for the last step's
	// pods: what no fleet from these pools costs less than.
	FinalBoundPerHour float64
	// FinalFreshPerHour is what provisioning the last step's pods from no
	// node would cost (scheduling.Solve with Repack, the pools' DaemonSet):
	// the fleet consolidation could reach by replacing every node.
	FinalFreshPerHour float64
	FinalNodes        int
}

// Sim is one simulation in progress.
type Sim struct {
	cfg     Config
	deps    []*Deployment
	step    int
	pools   []*disruption.NodePool
	spools  []*scheduling.NodePool
	daemon  *corev1.Pod
	cache   *scheduling.Cache
	nodes   []*Node // by name, which is launch order
	pending []*corev1.Pod
	// live pods of each Deployment, oldest first; seq numbers pod names.
	live map[string][]*corev1.Pod
	seq  map[string]int
	// where each bound pod is.
	nodeOf    map[*corev1.Pod]*Node
	nextNode  int
	taintsFor map[string][]corev1.Taint
}

// New prepares a simulation: the pools, the Deployments and their demand
// curve; the fleet starts empty.
func New(cfg Config) (*Sim, error) {
	cfg.defaults()
	if len(cfg.InstanceTypes) == 0 {
		return nil, fmt.Errorf("no instance types")
	}
	if cfg.MaxBaseReplicas < 4 {
		return nil, fmt.Errorf("MaxBaseReplicas %d is below 4", cfg.MaxBaseReplicas)
	}
	s := &Sim{cfg: cfg, cache: scheduling.NewCache(), live: map[string][]*corev1.Pod{}, seq: map[string]int{},
		nodeOf: map[*corev1.Pod]*Node{}, taintsFor: map[string][]corev1.Taint{poolBatch: {batchTaint}}}
	var its []*scheduling.InstanceType
	for _, it := range cfg.InstanceTypes {
		cpu := it.Capacity[corev1.ResourceCPU]
		if it.Requirements.Has(corev1.LabelArchStable, "amd64") && cpu.Value() <= cfg.MaxNodeCPU {
			its = append(its, it)
		}
	}
	for _, p := range []struct {
		name string
		ct   string
	}{{poolGeneral, v1.CapacityTypeOnDemand}, {poolBatch, v1.CapacityTypeSpot}} {
		opts := []fixtures.NodePoolOption{
			fixtures.WithUID("uid-" + p.name),
			fixtures.WithRequirements(
				fixtures.Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
				fixtures.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
				fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, p.ct)),
			fixtures.WithConsolidateAfter("0s"),
			fixtures.WithConsolidationPolicy(cfg.Policy),
			fixtures.WithBudgets(v1.Budget{Nodes: cfg.Budget}),
		}
		if t := s.taintsFor[p.name]; t != nil {
			opts = append(opts, fixtures.WithTaints(t...))
		}
		np := fixtures.NodePool(p.name, opts...)
		s.pools = append(s.pools, &disruption.NodePool{NodePool: np, InstanceTypes: its})
		var reqs []scheduling.Requirement
		for _, rq := range np.Spec.Template.Spec.Requirements {
			reqs = append(reqs, scheduling.NewRequirement(rq.Key, rq.Operator, rq.Values...))
		}
		s.spools = append(s.spools, &scheduling.NodePool{Name: p.name, Requirements: scheduling.NewRequirements(reqs...),
			Taints: np.Spec.Template.Spec.Taints, InstanceTypes: its})
	}
	s.daemon = fixtures.Pod("agent", fixtures.WithNamespace("kube-system"), fixtures.WithRequests("cpu", "100m", "memory", "128Mi"),
		fixtures.WithTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}),
		fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-agent"}))
	s.deps = newWorkload(cfg)
	return s, nil
}

// Deployments of the simulation, with their demand curve.
func (s *Sim) Deployments() []*Deployment { return s.deps }

// Nodes of the fleet, in name order.
func (s *Sim) Nodes() []*Node { return s.nodes }

// Run plays every step and sums them.
func Run(cfg Config) (*Report, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	sum := 0.0
	for s.step < s.cfg.Steps {
		st, err := s.Step()
		if err != nil {
			return nil, err
		}
		rep.add(st)
		sum += st.PricePerHour
	}
	rep.MeanPricePerHour = sum / float64(len(rep.Steps))
	rep.FinalBoundPerHour, err = s.LowerBound()
	if err != nil {
		return nil, err
	}
	rep.FinalFreshPerHour = s.FreshPrice()
	return rep, nil
}

func (r *Report) add(st StepReport) {
	r.Steps = append(r.Steps, st)
	r.Moves += st.Moves
	r.Disrupted += st.Disrupted
	r.Replacements += st.Replacements
	r.Evicted += st.Evicted
	r.Refused += st.Refused
	r.Launched += st.Launched
	r.Relaunched += st.Relaunched
	r.FinalPricePerHour, r.FinalNodes = st.PricePerHour, st.Nodes
}

// Step plays the next step (see the package documentation).
func (s *Sim) Step() (StepReport, error) {
	if s.step >= s.cfg.Steps {
		return StepReport{}, fmt.Errorf("all %d steps played", s.cfg.Steps)
	}
	st := StepReport{Step: s.step}
	s.scale(&st)
	var err error
	if st.Launched, err = s.place(s.pending); err != nil {
		return st, fmt.Errorf("step %d: %w", s.step, err)
	}
	passes := 0
	for ; passes < s.cfg.MaxPassesPerStep; passes++ {
		res := disruption.Run(s.disruptionInput())
		d := res.Decision
		if d == nil {
			for _, m := range res.Moves {
				if !m.Approved {
					st.Refused++
				}
			}
			break
		}
		if err := s.apply(d, &st); err != nil {
			return st, fmt.Errorf("step %d: %w", s.step, err)
		}
	}
	st.PassesCapped = passes == s.cfg.MaxPassesPerStep
	st.Pending = len(s.pending)
	st.Nodes = len(s.nodes)
	st.PricePerHour = s.PricePerHour()
	s.step++
	return st, nil
}

// PricePerHour of the fleet.
func (s *Sim) PricePerHour() float64 {
	total := 0.0
	for _, n := range s.nodes {
		total += n.Price
	}
	return total
}

// LowerBound is scheduling.LowerBound's $/h for every live pod over the pools.
func (s *Sim) LowerBound() (float64, error) {
	in := &scheduling.Input{NodePools: s.spools, DaemonSetPods: []*corev1.Pod{s.daemon}, Pods: s.livePods()}
	if len(in.Pods) == 0 {
		return 0, nil
	}
	b, err := scheduling.LowerBound(in)
	if err != nil {
		return 0, err
	}
	return b.PricePerHour, nil
}

// livePods are the Deployments' live pods, in Deployment order.
func (s *Sim) livePods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, d := range s.deps {
		pods = append(pods, s.live[d.Name]...)
	}
	return pods
}

// FreshPrice is the $/h of provisioning every live pod from no node, as the
// provisioner would (Repack), with the pools' DaemonSet, each claim at the
// offering launch takes: the cheapest of all its types', which where spot
// prices do not follow on-demand ones may be below the claim's Price.
func (s *Sim) FreshPrice() float64 {
	pods := s.livePods()
	if len(pods) == 0 {
		return 0
	}
	in := s.solverInput(pods, false)
	in.Options.Repack = true
	total := 0.0
	for _, c := range scheduling.Solve(in).NewClaims {
		if _, off := cheapestOffering(c); off.Price > 0 {
			total += off.Price
		} else {
			total += c.Price
		}
	}
	return total
}

// cheapestOffering is the instance type and offering a claim launches as:
// the cheapest available offering its requirements allow, of any of its types.
func cheapestOffering(c *scheduling.NewClaim) (*scheduling.InstanceType, scheduling.Offering) {
	var it *scheduling.InstanceType
	var off scheduling.Offering
	best := math.Inf(1)
	for _, t := range c.InstanceTypes {
		for _, o := range t.Offerings {
			if !o.Launchable() || !c.Requirements.Has(corev1.LabelTopologyZone, o.Zone) || !c.Requirements.Has(v1.CapacityTypeLabelKey, o.CapacityType) {
				continue
			}
			if o.Requirements.Len() > 0 && c.Requirements.Intersects(o.Requirements) != nil {
				continue
			}
			if o.Price < best {
				it, off, best = t, o, o.Price
			}
		}
	}
	return it, off
}

// scale brings every Deployment to its replica count for the step.
func (s *Sim) scale(st *StepReport) {
	for _, d := range s.deps {
		want := d.Replicas[s.step]
		st.Replicas += want
		pods := s.live[d.Name]
		for len(pods) < want {
			s.seq[d.Name]++
			p := d.pod(s.seq[d.Name], s.taintsFor[d.Pool])
			p.CreationTimestamp = metav1.NewTime(start.Add(time.Duration(s.step) * time.Hour))
			pods = append(pods, p)
			s.pending = append(s.pending, p)
		}
		if extra := len(pods) - want; extra > 0 {
			gone := map[*corev1.Pod]bool{}
			for _, p := range s.scaleDownOrder(pods)[:extra] {
				s.remove(p)
				gone[p] = true
			}
			kept := make([]*corev1.Pod, 0, want)
			for _, p := range pods {
				if !gone[p] {
					kept = append(kept, p)
				}
			}
			pods = kept
		}
		s.live[d.Name] = pods
	}
}

// scaleDownOrder ranks a Deployment's pods as the ReplicaSet controller does
// for deletion, in the parts that apply here: pending pods first, then pods
// sharing their node with more replicas of the Deployment, then the newest.
// It is what leaves nodes half empty after a wave goes down, the situation
// consolidation is for.
func (s *Sim) scaleDownOrder(pods []*corev1.Pod) []*corev1.Pod {
	colocated := map[string]int{}
	for _, p := range pods {
		colocated[p.Spec.NodeName]++
	}
	out := append([]*corev1.Pod(nil), pods...)
	idx := map[*corev1.Pod]int{}
	for i, p := range pods {
		idx[p] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			return a.Spec.NodeName == ""
		}
		if ca, cb := colocated[a.Spec.NodeName], colocated[b.Spec.NodeName]; ca != cb {
			return ca > cb
		}
		return idx[a] > idx[b]
	})
	return out
}

// remove deletes a pod wherever it is.
func (s *Sim) remove(p *corev1.Pod) {
	if n := s.nodeOf[p]; n != nil {
		n.Pods = without(n.Pods, p)
		delete(s.nodeOf, p)
		p.Spec.NodeName = ""
		return
	}
	s.pending = without(s.pending, p)
}

func without(pods []*corev1.Pod, p *corev1.Pod) []*corev1.Pod {
	for i, q := range pods {
		if q == p {
			return append(pods[:i:i], pods[i+1:]...)
		}
	}
	return pods
}

// solverInput is the provisioner's view of the pods: the pools and, for
// provisioning, the fleet's nodes (disruption builds those from its Nodes).
func (s *Sim) solverInput(pods []*corev1.Pod, withNodes bool) *scheduling.Input {
	in := &scheduling.Input{Pods: pods, NodePools: s.spools, DaemonSetPods: []*corev1.Pod{s.daemon}, Cache: s.cache,
		Options: scheduling.Options{WellKnownLabels: s.cfg.WellKnownLabels}}
	if withNodes {
		for _, n := range s.nodes {
			in.ExistingNodes = append(in.ExistingNodes, n.existing())
		}
	}
	return in
}

func (n *Node) existing() *scheduling.ExistingNode {
	return &scheduling.ExistingNode{Name: n.Name, Labels: n.Labels, Taints: n.Taints, Allocatable: n.Allocatable,
		Pods: n.Pods, Initialized: true, NodePool: n.Pool}
}

// place solves pods against the fleet and the pools, binds them where the
// solver put them and launches its new claims. Pods it cannot place stay
// pending. It returns how many nodes it launched.
func (s *Sim) place(pods []*corev1.Pod) (int, error) {
	if len(pods) == 0 {
		return 0, nil
	}
	in := s.solverInput(pods, true)
	in.Options.Repack = true // as the provisioner launches
	res := scheduling.Solve(in)
	byName := map[string]*Node{}
	for _, n := range s.nodes {
		byName[n.Name] = n
	}
	for _, pl := range res.ExistingNodes {
		for _, p := range pl.Pods {
			s.bind(p, byName[pl.Node.Name])
		}
	}
	for _, c := range res.NewClaims {
		n, err := s.launch(c)
		if err != nil {
			return 0, err
		}
		for _, p := range c.Pods {
			s.bind(p, n)
		}
	}
	return len(res.NewClaims), nil
}

// bind puts a pod on a node, taking it off the pending list.
func (s *Sim) bind(p *corev1.Pod, n *Node) {
	s.pending = without(s.pending, p)
	p.Spec.NodeName = n.Name
	p.Status.Phase = corev1.PodRunning
	n.Pods = append(n.Pods, p)
	s.nodeOf[p] = n
}

// launch creates the node a claim asks for: the cheapest available offering
// its requirements allow among its instance types (cheapest first), ties to
// the first type and zone, as the KWOK provider would bar its random tie-break.
func (s *Sim) launch(c *scheduling.NewClaim) (*Node, error) {
	it, off := cheapestOffering(c)
	if it == nil {
		return nil, fmt.Errorf("no available offering for a claim of nodepool %s", c.NodePool.Name)
	}
	s.nextNode++
	name := fmt.Sprintf("node-%05d", s.nextNode)
	n := &Node{Name: name, Pool: c.NodePool.Name, InstanceType: it, Zone: off.Zone, CapacityType: off.CapacityType, Price: off.Price,
		Taints: s.taintsFor[c.NodePool.Name], Allocatable: it.Allocatable(), Launched: s.step}
	n.Labels = map[string]string{
		labelNodePool: n.Pool, corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: n.Zone,
		v1.CapacityTypeLabelKey: n.CapacityType, corev1.LabelHostname: name,
	}
	for _, req := range it.Requirements.All() {
		if vals := req.Values(); len(vals) == 1 {
			n.Labels[req.Key] = vals[0]
		}
	}
	n.node = fixtures.Node(name, fixtures.WithLabels(n.Labels), fixtures.WithTaints(n.Taints...), fixtures.WithProviderID("kwok://"+name),
		fixtures.WithAllocatable(n.Allocatable), fixtures.NodeReady())
	n.claim = fixtures.NodeClaim(name, fixtures.WithLabels(n.Labels), fixtures.WithUID("nc-"+name), fixtures.WithNodeName(name),
		fixtures.CreatedAt(start.Add(time.Duration(s.step)*time.Hour)))
	n.claim.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	n.claim.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
	daemon := s.daemon.DeepCopy()
	daemon.Name = "agent-" + name
	daemon.UID = types.UID("agent-" + name)
	s.nodes = append(s.nodes, n)
	s.bind(daemon, n)
	return n, nil
}

// disruptionInput is what the disrupter's BuildInput gathers, from the fleet.
func (s *Sim) disruptionInput() *disruption.Input {
	in := &disruption.Input{Now: start.Add(time.Duration(s.step) * time.Hour), NodePools: s.pools, Scheduling: s.solverInput(s.pending, false),
		Options: disruption.Options{DisableRepackConsolidation: s.cfg.UpstreamMovesOnly}}
	for _, n := range s.nodes {
		in.Nodes = append(in.Nodes, &disruption.Node{Name: n.Name, Node: n.node, NodeClaim: n.claim, Existing: n.existing(),
			NodePool: n.Pool, Initialized: true, Nominated: n.Launched == s.step})
	}
	return in
}

// apply carries a decision out as the orchestration queue does: replacements
// first, then the candidates go and their pods are re-homed.
func (s *Sim) apply(d *disruption.Decision, st *StepReport) error {
	cands := map[string]bool{}
	for _, c := range d.Candidates {
		cands[c.Name] = true
	}
	var evicted []*corev1.Pod
	kept := s.nodes[:0:0]
	for _, n := range s.nodes {
		if !cands[n.Name] {
			kept = append(kept, n)
			continue
		}
		if n.Launched == s.step {
			return fmt.Errorf("decision %s disrupts node %s, launched this step and nominated", d.Method, n.Name)
		}
		for _, p := range n.Pods {
			delete(s.nodeOf, p)
			if !scheduling.OwnedByDaemonSet(p) {
				p.Spec.NodeName = ""
				evicted = append(evicted, p)
			}
		}
	}
	if len(kept)+len(d.Candidates) != len(s.nodes) {
		return fmt.Errorf("decision %s names nodes not in the fleet: %v", d.Method, d.CandidateNames())
	}
	s.nodes = kept
	s.pending = append(s.pending, evicted...)
	isEvicted := map[string]*corev1.Pod{}
	for _, p := range evicted {
		isEvicted[p.Name] = p
	}
	for _, c := range d.Replacements {
		n, err := s.launch(c)
		if err != nil {
			return err
		}
		if s.cfg.LeastAllocated {
			continue
		}
		for _, p := range c.Pods {
			if q := isEvicted[p.Name]; q != nil {
				s.bind(q, n)
				delete(isEvicted, p.Name)
			}
		}
	}
	var rest []*corev1.Pod
	for _, p := range evicted {
		if isEvicted[p.Name] == nil {
			continue
		}
		if s.cfg.LeastAllocated && len(p.Spec.TopologySpreadConstraints) == 0 {
			if n := s.leastAllocated(p); n != nil {
				s.bind(p, n)
				continue
			}
		}
		rest = append(rest, p)
	}
	relaunched, err := s.place(rest)
	if err != nil {
		return err
	}
	st.Relaunched += relaunched
	st.Moves++
	st.Disrupted += len(d.Candidates)
	st.Replacements += len(d.Replacements)
	st.Evicted += len(evicted)
	return nil
}

// leastAllocated is the node of the pod's pool with room for it that its pods
// leave the emptiest once it is there (the mean over cpu and memory of the
// share left free), nil when none has room.
func (s *Sim) leastAllocated(p *corev1.Pod) *Node {
	var best *Node
	bestScore := -1.0
	want := scheduling.PodRequestsView(p)
	for _, n := range s.nodes {
		if n.Pool != p.Spec.NodeSelector[labelNodePool] {
			continue
		}
		used := corev1.ResourceList{}
		for _, q := range n.Pods {
			for r, v := range scheduling.PodRequestsView(q) {
				sum := used[r]
				sum.Add(v)
				used[r] = sum
			}
		}
		score, fits := 0.0, true
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			alloc := n.Allocatable[r]
			u, w := used[r], want[r]
			free := alloc.AsApproximateFloat64() - u.AsApproximateFloat64() - w.AsApproximateFloat64()
			if free < 0 || alloc.IsZero() {
				fits = false
				break
			}
			score += free / alloc.AsApproximateFloat64() / 2
		}
		if fits && score > bestScore {
			best, bestScore = n, score
		}
	}
	return best
}

// Check verifies the replay's invariants: every Deployment has exactly its
// replica count of live pods, each live pod is bound to exactly one node of
// the fleet (whose pods list holds it) or pending, no other pod is anywhere
// but one DaemonSet pod per node, and no node's pods request more than its
// allocatable.
func (s *Sim) Check() error {
	seen := map[*corev1.Pod]string{}
	for _, n := range s.nodes {
		daemons := 0
		used := corev1.ResourceList{}
		for _, p := range n.Pods {
			if where, dup := seen[p]; dup {
				return fmt.Errorf("pod %s is on node %s and %s", p.Name, where, n.Name)
			}
			seen[p] = n.Name
			if p.Spec.NodeName != n.Name {
				return fmt.Errorf("pod %s is in node %s's list but bound to %q", p.Name, n.Name, p.Spec.NodeName)
			}
			if scheduling.OwnedByDaemonSet(p) {
				daemons++
			}
			for _, c := range p.Spec.Containers {
				for r, q := range c.Resources.Requests {
					u := used[r]
					u.Add(q)
					used[r] = u
				}
			}
		}
		if daemons != 1 {
			return fmt.Errorf("node %s runs %d DaemonSet pods, want 1", n.Name, daemons)
		}
		used[corev1.ResourcePods] = *resource.NewQuantity(int64(len(n.Pods)), resource.DecimalSI)
		for r, q := range used {
			if a, ok := n.Allocatable[r]; !ok || q.Cmp(a) > 0 {
				return fmt.Errorf("node %s (%s): pods request %s %s, allocatable %s", n.Name, n.InstanceType.Name, q.String(), r, a.String())
			}
		}
	}
	for _, p := range s.pending {
		if where, dup := seen[p]; dup {
			return fmt.Errorf("pod %s is pending and on node %s", p.Name, where)
		}
		seen[p] = ""
	}
	live := 0
	for _, d := range s.deps {
		pods := s.live[d.Name]
		if s.step > 0 && len(pods) != d.Replicas[s.step-1] {
			return fmt.Errorf("deployment %s has %d pods, want %d", d.Name, len(pods), d.Replicas[s.step-1])
		}
		for _, p := range pods {
			if _, ok := seen[p]; !ok {
				return fmt.Errorf("pod %s of deployment %s is neither on a node nor pending", p.Name, d.Name)
			}
		}
		live += len(pods)
	}
	if want := live + len(s.nodes); len(seen) != want {
		return fmt.Errorf("%d pods on nodes or pending, want %d live pods and %d DaemonSet pods", len(seen), live, len(s.nodes))
	}
	return nil
}
