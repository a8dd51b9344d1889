package plan

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/controllers/staticcapacity"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/kubectl/catalog"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// DefaultMaxSteps bounds the disruption passes a plan chains.
const DefaultMaxSteps = 50

// Options of a plan.
type Options struct {
	// Now is when budgets and schedules are evaluated (zero: time.Now()).
	Now time.Time
	// MaxSteps bounds the disruption decisions (0: DefaultMaxSteps).
	MaxSteps int
	// SpotToSpotConsolidation is the controller's feature gate.
	SpotToSpotConsolidation bool
	// NodeRepair is the controller's feature gate: with it the plan repairs
	// unhealthy nodes as the controller would.
	NodeRepair bool
	// Provider names the cloud provider in the output.
	Provider string
	// Providers are the providers a plan may use and prices nodes with
	// (nil: every provider compiled in, pkg/providers.All).
	Providers []cloudprovider.Provider
}

// Planner runs the controller's code over one snapshot. Its fields are
// exposed for `why`, which asks about one object of the same computation.
type Planner struct {
	Snapshot      *snapshot.Snapshot
	Cluster       *state.Cluster
	CloudProvider cloudprovider.CloudProvider
	Provisioner   *provisioning.Provisioner
	Opts          Options

	cache   *scheduling.Cache
	catalog *catalog.Catalog
	// prices of the NodeClaims the plan launched, by name.
	planned map[string]float64
	// buffers: the CapacityBuffers the controller acts on (nil: none), and
	// bufferOn their chunks on the NodeClaims the plan launched, by name.
	buffers  *capacitybuffer.Store
	bufferOn map[string][]*corev1.Pod
}

// NewPlanner feeds the snapshot into cluster state and wires a provisioner
// to it as the controller does.
func NewPlanner(snap *snapshot.Snapshot, cp cloudprovider.CloudProvider, opts Options) *Planner {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	clk := clocktesting.NewFakeClock(opts.Now)
	cluster := snap.Cluster(clk)
	prov := provisioning.NewProvisioner(snap.Store, cp, cluster, &record.FakeRecorder{}, clk, provisioning.Options{})
	return &Planner{Snapshot: snap, Cluster: cluster, CloudProvider: cp, Provisioner: prov, Opts: opts,
		cache: scheduling.NewCache(), catalog: catalogOf(opts.Providers), planned: map[string]float64{},
		buffers: buffersOf(snap), bufferOn: map[string][]*corev1.Pod{}}
}

// buffersOf resolves, from the snapshot, the CapacityBuffers a controller
// acts on: those whose ReadyForProvisioning condition is set (the buffer
// controller, which runs only with the CapacityBuffer feature gate, wrote
// it). Each is resolved again here, as the controller would now.
func buffersOf(snap *snapshot.Snapshot) *capacitybuffer.Store {
	var store *capacitybuffer.Store
	for _, b := range snapshot.All[*autoscalingv1beta1.CapacityBuffer](snap) {
		if apimeta.FindStatusCondition(b.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) == nil {
			continue
		}
		b = b.DeepCopy()
		tmpl, err := capacitybuffer.Resolve(context.Background(), snap.Store, b)
		if err != nil || tmpl == nil {
			continue
		}
		if store == nil {
			store = capacitybuffer.NewStore()
		}
		store.Set(b, *tmpl)
	}
	return store
}

// Provision is one provisioning decision: the solver's results on the
// provisioner's pending pods and solver input.
func (p *Planner) Provision(ctx context.Context) (*scheduling.Input, *scheduling.Results, error) {
	pods, err := p.Provisioner.PendingPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	in, _, err := p.Provisioner.LaunchInput(ctx, pods) // as the provisioner launches
	if err != nil {
		return nil, nil, err
	}
	in.Cache = p.cache
	// The buffers' chunks, as the provisioner places them with the pending pods.
	in.Pods = append(in.Pods, p.buffers.VirtualPods()...)
	if len(in.Pods) == 0 {
		return in, &scheduling.Results{PodErrors: map[*corev1.Pod]error{}}, nil
	}
	return in, scheduling.Solve(in), nil
}

// DisruptionInput is the disruption controller's input on the current state.
func (p *Planner) DisruptionInput(ctx context.Context) (*disruption.Input, error) {
	in, _, err := disrupter.BuildInput(ctx, disrupter.InputSources{
		Kube: p.Snapshot.Store, Cluster: p.Cluster, Provisioner: p.Provisioner, CloudProvider: p.CloudProvider,
		Cache: p.cache, Now: p.Opts.Now,
		Options: disruption.Options{SpotToSpotConsolidation: p.Opts.SpotToSpotConsolidation, NodeRepair: p.Opts.NodeRepair},
	})
	return in, err
}

// Compute makes the whole plan. costBefore is the $/h of the cluster before
// the snapshot was edited (see CostOf).
func (p *Planner) Compute(ctx context.Context, costBefore float64) (*Plan, error) {
	out := &Plan{Source: p.Snapshot.Source, Provider: p.Opts.Provider, Notes: p.Snapshot.Notes, CostPerHourBefore: costBefore,
		Launches: []Launch{}, Disruptions: []Disruption{}, Pending: []PendingPod{}, Blocked: []Blocked{}, Budgets: []Budget{}}
	_, res, err := p.Provision(ctx)
	if err != nil {
		return nil, err
	}
	out.Launches = p.launch(res.NewClaims, "provisioning")
	for _, placement := range res.ExistingNodes {
		p.Cluster.Nominate(placement.Node.Name)
	}
	out.Pending = pendingPods(res.PodErrors)
	out.Buffers = p.keepBuffers(res)
	static, err := p.static(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range static {
		out.Static = append(out.Static, s.pool)
		out.Launches = append(out.Launches, s.launches...)
	}

	var last *disruption.Result
	for step := 1; ; step++ {
		in, err := p.DisruptionInput(ctx)
		if err != nil {
			return nil, err
		}
		r := disruption.Run(in)
		last = r
		d := r.Decision
		if d == nil {
			break
		}
		if step > p.Opts.MaxSteps {
			out.StepsTruncated = true
			break
		}
		out.Disruptions = append(out.Disruptions, p.disrupt(step, d))
	}
	for _, e := range last.Explanations {
		b := Blocked{Node: e.Node.Name, NodePool: e.Node.NodePool, Method: e.Method.String(), Code: string(e.Code), Message: e.Message, Blocking: e.Blocking()}
		if e.Node.NodeClaim != nil {
			b.NodeClaim = e.Node.NodeClaim.Name
		}
		out.Blocked = append(out.Blocked, b)
	}
	for _, b := range last.Budgets {
		if b.Allowed == 0 && b.Message != "" {
			out.Budgets = append(out.Budgets, Budget{NodePool: b.NodePool, Reason: string(b.Reason), Limit: b.Limit,
				Disrupting: b.Disrupting, Allowed: b.Allowed, Message: b.Message})
		}
	}
	out.CostPerHourAfter, out.Unpriced = p.cost()
	out.LowerBoundPerHour = p.lowerBound(ctx)
	return out, nil
}

type staticStep struct {
	pool     StaticPool
	launches []Launch
}

// static runs the static capacity controller's step on every static
// NodePool it acts on: those not unready whose validation did not find the
// StaticCapacity gate off. Launches are recorded as in-flight NodeClaims
// and removed nodes are marked for deletion, so the disruption steps after
// see the pool at its replicas.
func (p *Planner) static(ctx context.Context) ([]staticStep, error) {
	var out []staticStep
	for _, np := range p.Cluster.NodePools() {
		if np.Spec.Replicas == nil || np.DeletionTimestamp != nil {
			continue
		}
		// As the provisioner: a pool not known to be unready (a manifest
		// applied in memory has no status yet) is taken as ready.
		if c := np.StatusConditions().Root(); c != nil && c.IsFalse() {
			continue
		}
		if c := np.StatusConditions().Get(v1.ConditionTypeValidationSucceeded); c != nil && c.Reason == nodepool.ReasonStaticCapacityDisabled {
			continue
		}
		step := staticcapacity.Decide(np, p.Cluster.Nodes(), p.Opts.Now)
		s := staticStep{pool: StaticPool{NodePool: np.Name, Replicas: *np.Spec.Replicas, Current: step.Active, Launch: step.Launch, AtLimit: step.AtLimit}}
		var claim *scheduling.NewClaim
		if step.Launch > 0 {
			var err error
			if claim, err = p.Provisioner.StaticClaim(ctx, np); err != nil {
				return nil, err
			}
			if claim == nil {
				s.pool.Launch = 0 // it admits no instance type with an available offering
			}
		}
		for i := 0; claim != nil && i < step.Launch; i++ {
			s.launches = append(s.launches, p.launch([]*scheduling.NewClaim{claim}, fmt.Sprintf("static nodepool %s (replicas %d)", np.Name, *np.Spec.Replicas))...)
		}
		var claims []string
		for _, sn := range step.Remove {
			s.pool.Remove = append(s.pool.Remove, sn.Name())
			claims = append(claims, sn.NodeClaim.Name)
		}
		p.Cluster.MarkForDeletion(claims...)
		out = append(out, s)
	}
	return out, nil
}

// lowerBound is scheduling.LowerBound for the pods the fleet runs after the
// plan (every pod bound to a node, DaemonSets' and finished ones aside, and
// those still pending), over the NodePools provisioning may launch from: what
// no fleet under these NodePools costs less than. 0 when it cannot be had.
func (p *Planner) lowerBound(ctx context.Context) float64 {
	pods, err := p.Provisioner.PendingPods(ctx)
	if err != nil {
		return 0
	}
	for _, sn := range p.Cluster.Nodes() {
		for _, pod := range sn.Pods {
			if scheduling.OwnedByDaemonSet(pod) || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			pods = append(pods, pod)
		}
	}
	pods = append(pods, p.buffers.VirtualPods()...)
	in, _, err := p.Provisioner.SolverInput(ctx, pods)
	if err != nil {
		return 0
	}
	b, err := scheduling.LowerBound(in)
	if err != nil {
		return 0
	}
	return b.PricePerHour
}

// launch records the claims as NodeClaims in flight, as the provisioner does
// right after creating them (so later passes count them as capacity and
// leave them alone while nominated).
func (p *Planner) launch(claims []*scheduling.NewClaim, why string) []Launch {
	out := []Launch{}
	pools := map[string]*v1.NodePool{}
	for _, np := range p.Cluster.NodePools() {
		pools[np.Name] = np
	}
	for _, c := range claims {
		np, ok := pools[c.NodePool.Name]
		if !ok {
			continue
		}
		nc := provisioning.NewNodeClaim(np, c)
		nc.Name = fmt.Sprintf("%s-plan-%d", np.Name, len(p.planned)+1)
		p.Cluster.UpdateNodeClaim(nc)
		p.Cluster.Nominate(nc.Name)
		for _, pod := range c.Pods {
			if capacitybuffer.IsVirtual(pod) {
				p.bufferOn[nc.Name] = append(p.bufferOn[nc.Name], pod)
			}
		}
		l := describeLaunch(c)
		l.Name, l.For = nc.Name, why
		p.planned[nc.Name] = l.PricePerHour
		out = append(out, l)
	}
	return out
}

func describeLaunch(c *scheduling.NewClaim) Launch {
	l := Launch{NodePool: c.NodePool.Name, InstanceTypeOptions: len(c.InstanceTypes), PricePerHour: c.Price, Pods: podNames(c.Pods)}
	requests := corev1.ResourceList{}
	for _, rl := range []corev1.ResourceList{c.Requests, c.DaemonSetOverhead} {
		for n, q := range rl {
			cur := requests[n]
			cur.Add(q)
			requests[n] = cur
		}
	}
	l.Requests = scheduling.FormatResources(requests)
	if len(c.InstanceTypes) == 0 {
		return l
	}
	it := c.InstanceTypes[0]
	l.InstanceType = it.Name
	best := -1.0
	for _, o := range it.Offerings {
		if !o.Launchable() || !c.Requirements.Has(scheduling.LabelZone, o.Zone) || !c.Requirements.Has(scheduling.LabelCapacityType, o.CapacityType) {
			continue
		}
		if best < 0 || o.Price < best {
			best, l.Zone, l.CapacityType = o.Price, o.Zone, o.CapacityType
		}
	}
	return l
}

// disrupt applies a decision as the orchestration queue does once the
// replacements exist: replacements in flight, candidates marked for deletion.
func (p *Planner) disrupt(step int, d *disruption.Decision) Disruption {
	out := Disruption{Step: step, Method: d.Method.String(), Reason: string(d.Method.Reason()), Action: string(d.Action()),
		Explanation: d.Explanation, PricePerHourRemoved: d.CandidatesPrice, PricePerHourAdded: d.ReplacementsPrice}
	out.Replacements = p.launch(d.Replacements, fmt.Sprintf("disruption %d", step))
	seen := map[string]bool{}
	var claims []string
	for _, c := range d.Candidates {
		out.Nodes = append(out.Nodes, c.Name)
		if !seen[c.NodePool] {
			seen[c.NodePool] = true
			out.NodePools = append(out.NodePools, c.NodePool)
		}
		if c.NodeClaim != nil {
			claims = append(claims, c.NodeClaim.Name)
		}
	}
	if d.Reboot {
		// A reboot keeps the node: it is rebooting for the rest of the plan
		// (no method takes it again), not going away.
		for _, c := range d.Candidates {
			if c.NodeClaim == nil {
				continue
			}
			nc := c.NodeClaim.DeepCopy()
			nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonRequested, d.Explanation)
			p.Cluster.UpdateNodeClaim(nc)
		}
		return out
	}
	p.Cluster.MarkForDeletion(claims...)
	return out
}

func pendingPods(errs map[*corev1.Pod]error) []PendingPod {
	out := []PendingPod{}
	for pod, err := range errs {
		if capacitybuffer.IsVirtual(pod) {
			continue // a buffer's chunk: see Plan.Buffers
		}
		pp := PendingPod{Pod: pod.Namespace + "/" + pod.Name}
		if pe, ok := err.(*scheduling.PodError); ok {
			pp.Reasons = pe.Reasons
		} else {
			pp.Reasons = []string{err.Error()}
		}
		out = append(out, pp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	sort.Strings(out)
	return out
}

// cost sums the $/h of the capacity in cluster state that is not going away.
func (p *Planner) cost() (float64, int) {
	return costOf(p.Cluster, p.catalog, p.planned)
}

// CostOf is the $/h of a cluster state's capacity not being deleted (nodes
// priced from their labels, see catalog.PriceOf), and how many could not be
// priced, with the catalogs of providers (nil: every provider compiled in).
func CostOf(c *state.Cluster, providers []cloudprovider.Provider) (float64, int) {
	return costOf(c, catalogOf(providers), nil)
}

// catalogOf prices through providers, or through the registry's when nil.
func catalogOf(providers []cloudprovider.Provider) *catalog.Catalog {
	if providers == nil {
		return catalog.Default()
	}
	return catalog.New(providers)
}

func costOf(c *state.Cluster, cat *catalog.Catalog, planned map[string]float64) (float64, int) {
	total, unpriced := 0.0, 0
	for _, sn := range c.Nodes() {
		if sn.MarkedForDeletion() {
			continue
		}
		if sn.NodeClaim != nil {
			if price, ok := planned[sn.NodeClaim.Name]; ok {
				total += price
				continue
			}
		}
		if price, ok := priceOf(cat, sn); ok {
			total += price
		} else {
			unpriced++
		}
	}
	return total, unpriced
}

// priceOf prices a node, or a NodeClaim not registered yet from the labels
// its Node will carry.
func priceOf(cat *catalog.Catalog, sn *state.StateNode) (float64, bool) {
	n := sn.Node
	if n == nil {
		n = &corev1.Node{}
		n.Labels = sn.Labels()
		n.Spec.ProviderID = sn.ProviderID()
	}
	return cat.PriceOf(n)
}

// keepBuffers tells cluster state where the provisioning step keeps the
// buffers' chunks, as the provisioner does (so that disruption counts that
// room as taken), and describes each buffer's chunks.
func (p *Planner) keepBuffers(res *scheduling.Results) []Buffer {
	if p.buffers == nil {
		return nil
	}
	byNode := map[string][]*corev1.Pod{}
	var existing, launched, failed []*corev1.Pod
	for _, pl := range res.ExistingNodes {
		for _, pod := range pl.Pods {
			if capacitybuffer.IsVirtual(pod) {
				byNode[pl.Node.Name] = append(byNode[pl.Node.Name], pod)
				existing = append(existing, pod)
			}
		}
	}
	for name, pods := range p.bufferOn {
		byNode[name] = append(byNode[name], pods...)
		launched = append(launched, pods...)
	}
	for pod := range res.PodErrors {
		if capacitybuffer.IsVirtual(pod) {
			failed = append(failed, pod)
		}
	}
	p.Cluster.SetBufferPods(byNode)
	counts := capacitybuffer.Tally(existing, launched, failed)
	out := []Buffer{}
	for _, b := range snapshot.All[*autoscalingv1beta1.CapacityBuffer](p.Snapshot) {
		c, ok := counts[types.NamespacedName{Namespace: b.Namespace, Name: b.Name}]
		if !ok {
			continue
		}
		out = append(out, Buffer{Buffer: b.Namespace + "/" + b.Name, Chunks: c.Existing + c.New + c.Failed, OnExistingCapacity: c.Existing, Launched: c.New, NoPlace: c.Failed})
	}
	return out
}
