package provisioning

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Event reasons (upstream's).
const (
	EventNominated        = "Nominated"
	EventFailedScheduling = "FailedScheduling"
	// EventNoCompatibleInstanceTypes is recorded on a NodePool none of whose
	// instance types its requirements admit.
	EventNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
)

// Options of the provisioner.
type Options struct {
	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration
	PreferencePolicy  scheduling.PreferencePolicy
	MinValuesPolicy   scheduling.MinValuesPolicy
	// SyncTimeout bounds how long one batch waits for cluster state to sync before
	// giving up until the next trigger.
	SyncTimeout time.Duration
	// CreateClient, when set, makes the NodeClaim creates (see create). The
	// operator gives it a connection of its own to the API server: on the
	// shared one a create's request and response queue behind the watch
	// streams, which carry every pod change of a scale-up.
	CreateClient client.Client
	// DefaultTopologySpread are kube-scheduler's default topology spread
	// constraints (SCHEDULER_CONFIG): the solver input gives them to pods that
	// declare none (see defaultspread).
	DefaultTopologySpread []corev1.TopologySpreadConstraint
	// StaticCapacity is the StaticCapacity feature gate: static NodePools'
	// nodes come from the static controller (pkg/controllers/static).
	StaticCapacity bool
	// SimulateDRARequests is IGNORE_DRA_REQUESTS=false (see
	// scheduling.Options.SimulateDRARequests). Unset, upstream's default, pods
	// with Dynamic Resource Allocation requests launch nothing: each is told
	// why in a FailedScheduling event, and disruption does not move them.
	SimulateDRARequests bool
	// Buffers, with the CapacityBuffer gate on, holds the resolved
	// CapacityBuffers: every decision places their virtual pods with the
	// pending pods (see package capacitybuffer and buffers.go).
	Buffers *capacitybuffer.Store
}

// Provisioner turns batches of pending pods into NodeClaims.
type Provisioner struct {
	kube          client.Client
	cloudProvider cloudprovider.CloudProvider
	cluster       *state.Cluster
	recorder      record.EventRecorder
	publisher     events.Publisher
	clock         clock.Clock
	opts          Options
	batcher       *Batcher
	// cache keeps the per-NodePool preparation of the instance types across
	// decisions; it misses by itself when a pool, its instance types or their
	// offerings change.
	cache *scheduling.Cache
	// plans keeps pods on the NodeClaims launched for them (see plans).
	plans *plans
	// nominations limits the Nominated events (see nominations).
	nominations *nominations
	// loops stops launching for pods whose NodeClaims keep becoming nodes
	// they do not run on (see loops.go).
	loops *loopGuard
}

// NewProvisioner wires the provisioner; its Batcher is shared with the pod trigger.
func NewProvisioner(kube client.Client, cp cloudprovider.CloudProvider, cluster *state.Cluster, recorder record.EventRecorder, clk clock.Clock, opts Options) *Provisioner {
	if opts.BatchIdleDuration == 0 {
		opts.BatchIdleDuration = time.Second
	}
	if opts.BatchMaxDuration == 0 {
		opts.BatchMaxDuration = 10 * time.Second
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	return &Provisioner{
		kube: kube, cloudProvider: cp, cluster: cluster, recorder: events.NewDedupingRecorder(recorder, clk), clock: clk, opts: opts,
		publisher: events.NewPublisher(recorder, clk),
		batcher:   NewBatcher(clk, opts.BatchIdleDuration, opts.BatchMaxDuration),
		cache:     scheduling.NewCache(),
		plans:     newPlans(),

		nominations: newNominations(clk),
		loops:       newLoopGuard(clk),
	}
}

// Batcher is the provisioner's batcher, for triggers.
func (p *Provisioner) Batcher() *Batcher { return p.batcher }

// Trigger asks for a decision (e.g. after capacity was lost).
func (p *Provisioner) Trigger(uid types.UID) { p.batcher.Trigger(uid) }

// NeedLeaderElection: only the leader launches capacity.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Start runs batches until ctx ends (a manager Runnable).
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	ctx = log.IntoContext(ctx, logger)
	for p.batcher.Wait(ctx) {
		w := p.batcher.LastWindow()
		logger.Info("batch window closed", "opened", w.Opened.Format(time.RFC3339Nano), "closed", w.Closed.Format(time.RFC3339Nano),
			"triggers", w.Triggers, "retries", w.Retries, "reason", w.Reason)
		if _, err := p.Schedule(ctx); err != nil {
			logger.Error(err, "provisioning failed")
		}
	}
	return nil
}

// Result of one provisioning decision.
type Result struct {
	Solve      *scheduling.Results
	NodeClaims []*v1.NodeClaim
	// SkippedNodePools maps a NodePool that launched nothing to why.
	SkippedNodePools map[string]string
	// Held are the pods nothing was launched for because NodeClaims launched
	// for them before kept becoming nodes they did not run on (loops.go).
	Held []*corev1.Pod
}

// Schedule makes one decision: pending pods (plus pods on capacity being deleted,
// and pods kube-scheduler has not tried yet, see AwaitingScheduler) are solved against existing and in-flight capacity and the NodePools that may
// launch, and a NodeClaim is created for every new claim.
func (p *Provisioner) Schedule(ctx context.Context) (*Result, error) {
	logger := log.FromContext(ctx)
	decisionStart := time.Now()
	// No decision on a partial view: a NodeClaim missing from state would be launched again.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, p.opts.SyncTimeout, true, p.cluster.Synced); err != nil {
		return nil, fmt.Errorf("waiting for cluster state to sync: %w", err)
	}
	syncWait := time.Since(decisionStart)
	pods, early, err := p.decisionPods(ctx)
	if err != nil {
		return nil, err
	}
	pods = p.observePending(pods)
	uids := make([]types.UID, len(pods))
	for i, pod := range pods {
		uids[i] = pod.UID
	}
	p.batcher.Decided(uids)
	if len(pods) == 0 {
		p.buffersDecided(ctx, nil, &scheduling.Results{})
		return &Result{Solve: &scheduling.Results{}}, nil
	}
	in, skipped, err := p.LaunchInput(ctx, pods)
	if err != nil {
		return nil, err
	}
	in.Pods = withoutPreemptors(in, early)
	var keptOn []string
	in.Pods, keptOn = p.plans.apply(in)
	for _, name := range keptOn {
		p.cluster.Nominate(name)
	}
	launches := p.loops.observe(p.cluster)
	var held []*corev1.Pod
	in.Pods, held = p.loops.held(in)
	p.launchLoopEvents(held)
	if len(in.Pods) == 0 {
		p.buffersDecided(ctx, in, &scheduling.Results{})
		return &Result{Solve: &scheduling.Results{}, SkippedNodePools: skipped, Held: held}, nil
	}
	pods = in.Pods
	awaiting := 0
	for _, pod := range pods {
		if early[pod.UID] {
			awaiting++
		}
	}
	in.Cache = p.cache
	start := time.Now()
	endRun := runs.begin("provisioner", len(pods))
	results := scheduling.Solve(in)
	endRun()
	SchedulingDuration.WithLabelValues("provisioner").Observe(time.Since(start).Seconds())
	// Virtual pods of capacity buffers are neither timed nor counted.
	failed := capacitybuffer.Real(failedPods(results))
	p.cluster.PodTimes.Decided(capacitybuffer.Real(placedPods(results)), failed)
	if stopped := p.loops.judge(p.cluster, in, results, launches); len(stopped) > 0 {
		var stoppedPods []*corev1.Pod
		results.NewClaims, stoppedPods = withoutWorkloads(results.NewClaims, stopped)
		logger.Info("stopped launching for pods whose nodeclaims keep becoming nodes they do not run on", "pods", len(stoppedPods))
		p.launchLoopEvents(stoppedPods)
		held = append(held, stoppedPods...)
	}
	UnschedulablePods.WithLabelValues("provisioner").Set(float64(len(failed)))
	logger.Info("computed new nodeclaim(s) to fit pod(s)", "pods", len(pods), "awaiting-scheduler", awaiting, "nodeclaims", len(results.NewClaims),
		"existing", len(results.ExistingNodes), "unschedulable", len(results.PodErrors), "duration", time.Since(start).String(),
		// Before the solve: waiting for cluster state to catch up with the
		// cache, then listing the pods and building the solver's input.
		"sync-wait", syncWait.String(), "prepare", start.Sub(decisionStart).String())

	npByName := map[string]*v1.NodePool{}
	for _, np := range p.cluster.NodePools() {
		npByName[np.Name] = np
	}
	createStart := time.Now()
	created, err := p.create(ctx, npByName, results.NewClaims)
	if len(results.NewClaims) > 0 {
		logger.Info("created nodeclaim(s)", "nodeclaims", len(created), "duration", time.Since(createStart).String())
	}
	for _, placement := range results.ExistingNodes {
		p.cluster.Nominate(placement.Node.Name)
		kind := "node"
		if placement.Node.InFlight {
			kind = "nodeclaim"
		}
		for _, pod := range capacitybuffer.Real(placement.Pods) {
			if p.nominations.allow(pod) {
				p.recorder.Eventf(pod, corev1.EventTypeNormal, EventNominated, "Pod should schedule on: %s/%s", kind, placement.Node.Name)
			}
		}
	}
	for pod, perr := range results.PodErrors {
		if capacitybuffer.IsVirtual(pod) {
			continue
		}
		if scheduling.IsDRAError(perr) {
			logger.Info("skipping pod with Dynamic Resource Allocation requirements, not yet supported by Karpenter", "Pod", klog.KObj(pod))
		}
		p.recorder.Eventf(pod, corev1.EventTypeWarning, EventFailedScheduling, "Failed to schedule pod, %s", perr.Error())
	}
	p.buffersDecided(ctx, in, results)
	p.exportNodePoolMetrics()
	return &Result{Solve: results, NodeClaims: created, SkippedNodePools: skipped, Held: held}, err
}

// observePending keeps the pods the provisioner decides about and exports
// what upstream does of them before a decision: the ignored pods (those asking
// not to run on a node Karpenter provisions, left out without an event), the
// pending pods by the zone they can go to, and the first time each pending
// pod was seen (for the pod latency metrics).
func (p *Provisioner) observePending(pods []*corev1.Pod) []*corev1.Pod {
	kept := make([]*corev1.Pod, 0, len(pods))
	ignored := 0
	byZone := map[string]int{}
	var pending []*corev1.Pod
	for _, pod := range pods {
		if pod.Spec.NodeName != "" || capacitybuffer.IsVirtual(pod) {
			kept = append(kept, pod) // on capacity being deleted, or a buffer's: not pending
			continue
		}
		if asksForNoKarpenterNode(pod) {
			ignored++
			continue
		}
		kept = append(kept, pod)
		pending = append(pending, pod)
		if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
			byZone[effectiveZone(pod)]++
		}
	}
	IgnoredPods.Set(float64(ignored))
	PendingPodsByEffectiveZone.DeletePartialMatch(prometheus.Labels{"controller": "provisioner"})
	for zone, n := range byZone {
		PendingPodsByEffectiveZone.WithLabelValues("provisioner", zone).Set(float64(n))
	}
	p.cluster.PodTimes.Ack(pending...)
	return kept
}

// placedPods are the pods a decision found a place for; failedPods those it did not.
func placedPods(r *scheduling.Results) []*corev1.Pod {
	var out []*corev1.Pod
	for _, c := range r.NewClaims {
		out = append(out, c.Pods...)
	}
	for _, e := range r.ExistingNodes {
		out = append(out, e.Pods...)
	}
	return out
}

func failedPods(r *scheduling.Results) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(r.PodErrors))
	for pod := range r.PodErrors {
		out = append(out, pod)
	}
	return out
}

// launchLoopEvents records the LaunchLoop event on pods nothing is launched for.
func (p *Provisioner) launchLoopEvents(pods []*corev1.Pod) {
	for _, pod := range pods {
		if msg := p.loops.message(pod); msg != "" {
			p.recorder.Eventf(pod, corev1.EventTypeWarning, EventLaunchLoop, "%s", msg)
		}
	}
}

// withoutWorkloads takes the pods of the stopped workloads off the claims; a
// claim left without pods is not launched. It returns the claims and the pods
// taken off.
func withoutWorkloads(claims []*scheduling.NewClaim, stopped map[types.UID]bool) ([]*scheduling.NewClaim, []*corev1.Pod) {
	out := make([]*scheduling.NewClaim, 0, len(claims))
	var taken []*corev1.Pod
	for _, c := range claims {
		var keep []*corev1.Pod
		for _, pod := range c.Pods {
			if stopped[workloadOf(pod)] {
				taken = append(taken, pod)
			} else {
				keep = append(keep, pod)
			}
		}
		switch {
		case len(keep) == 0:
			continue
		case len(keep) < len(c.Pods):
			cc := *c
			cc.Pods = keep
			c = &cc
		}
		out = append(out, c)
	}
	return out, taken
}

// SolverInput is the solver's input for placing pods: the cluster state
// snapshot (existing and in-flight capacity, DaemonSets, namespaces, volumes),
// the NodePools that may launch and the solver options. It also returns, per
// NodePool that may not launch, why. The disruption controller simulates with
// the same input, so that it never counts on a placement provisioning would
// not make.
func (p *Provisioner) SolverInput(ctx context.Context, pods []*corev1.Pod) (*scheduling.Input, map[string]string, error) {
	in, err := p.cluster.Snapshot(ctx, pods)
	if err != nil {
		return nil, nil, err
	}
	in.Pods = p.DefaultSpread().Apply(ctx, in.Pods)
	pools, unavailable, skipped, err := p.nodePools(ctx)
	if err != nil {
		return nil, nil, err
	}
	in.NodePools = pools
	in.UnavailableNodePools = unavailable
	in.Options = scheduling.Options{
		PreferencePolicy:    p.opts.PreferencePolicy,
		MinValuesPolicy:     p.opts.MinValuesPolicy,
		WellKnownLabels:     wellKnownLabels(pools),
		SimulateDRARequests: p.opts.SimulateDRARequests,
	}
	return in, skipped, nil
}

// LaunchInput is SolverInput for a solve whose new claims are launched: they are repacked
// into the cheapest mix of nodes the solver finds (scheduling's repack.go). The disruption
// controller's simulations use SolverInput as it is; only repack consolidation repacks.
func (p *Provisioner) LaunchInput(ctx context.Context, pods []*corev1.Pod) (*scheduling.Input, map[string]string, error) {
	in, skipped, err := p.SolverInput(ctx, pods)
	if in != nil {
		in.Options.Repack = true
	}
	return in, skipped, err
}

// PendingPods lists the pods to provision for, in a stable order: pods the
// kube-scheduler could not place and pods on capacity being deleted.
func (p *Provisioner) PendingPods(ctx context.Context) ([]*corev1.Pod, error) {
	// Only unbound pods can be pending: the index spares copying the bound ones.
	unbound, err := podindex.OnNodeReadOnly(ctx, p.kube, "")
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []*corev1.Pod
	for _, pod := range unbound {
		if IsProvisionable(pod) {
			out = append(out, pod)
		}
	}
	out = append(out, p.cluster.PodsOnDeletingCapacity()...)
	sortPods(out)
	return out, nil
}

// nodePools adapts the NodePools that may launch. A NodePool being deleted, marked
// not Ready, whose NodeClass is missing or not Ready, or whose limits admit no node
// launches nothing; it is returned among the unavailable pools, with a message
// naming it, so that a pod selecting it is told why (and the same message is the
// skip reason per NodePool).
func (p *Provisioner) nodePools(ctx context.Context) ([]*scheduling.NodePool, []*scheduling.UnavailableNodePool, map[string]string, error) {
	logger := log.FromContext(ctx)
	skipped := map[string]string{}
	var out []*scheduling.NodePool
	var unavailable []*scheduling.UnavailableNodePool
	skip := func(np *v1.NodePool, msg string) {
		skipped[np.Name] = msg
		unavailable = append(unavailable, &scheduling.UnavailableNodePool{NodePool: *adaptNodePool(np, nil, nil), Message: msg})
	}
	for _, np := range p.cluster.NodePools() {
		if np.DeletionTimestamp != nil {
			skip(np, fmt.Sprintf("nodepool %s is being deleted", np.Name))
			continue
		}
		if c := np.StatusConditions().Root(); c != nil && c.IsFalse() {
			skip(np, fmt.Sprintf("nodepool %s is not ready: %s", np.Name, notReadyCause(np, c)))
			continue
		}
		if reason, err := p.nodeClassNotReady(ctx, np); err != nil {
			return nil, nil, nil, err
		} else if reason != "" {
			skip(np, fmt.Sprintf("nodepool %s is not ready: %s", np.Name, reason))
			continue
		}
		if why := v1.LimitsAdmitNoNode(np.Spec.Limits); why != "" {
			skip(np, fmt.Sprintf("nodepool %s: limits allow no node (%s)", np.Name, why))
			continue
		}
		if np.Spec.Replicas != nil {
			// Static NodePools never take part in provisioning for pods, as
			// upstream; keeping their replicas is not built yet.
			why := v1.StaticGateOff
			if p.opts.StaticCapacity {
				why = "its nodes come from spec.replicas, not from pending pods"
			}
			skip(np, fmt.Sprintf("nodepool %s is static (spec.replicas: %d): %s", np.Name, *np.Spec.Replicas, why))
			continue
		}
		its, err := p.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			if cloudprovider.IsNodeClassNotReadyError(err) {
				skip(np, fmt.Sprintf("nodepool %s is not ready: %v", np.Name, err))
				continue
			}
			if cloudprovider.IsUnevaluatedNodePoolError(err) {
				// Its prices are not known as the NodeOverlays set them yet.
				skip(np, fmt.Sprintf("nodepool %s is awaiting nodeoverlay evaluation", np.Name))
				continue
			}
			return nil, nil, nil, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err)
		}
		if len(its) == 0 {
			p.publisher.Publish(noCompatibleInstanceTypesEvent(np, false))
			skip(np, fmt.Sprintf("nodepool %s has no instance types", np.Name))
			continue
		}
		adapted := adaptNodePool(np, its, p.remaining(np, its))
		if n, minValues := adapted.CompatibleInstanceTypes(p.opts.MinValuesPolicy); n == 0 {
			p.publisher.Publish(noCompatibleInstanceTypesEvent(np, minValues))
			if minValues {
				logger.Info("skipping, nodepool requirements filtered out all instance types", "nodepool", np.Name, "minValuesIncompatible", true)
				skip(np, fmt.Sprintf("nodepool %s: requirements filtered out all compatible available instance types due to minValues incompatibility", np.Name))
			} else {
				logger.Info("skipping, nodepool requirements filtered out all instance types", "nodepool", np.Name)
				skip(np, fmt.Sprintf("nodepool %s: requirements filtered out all compatible available instance types", np.Name))
			}
			continue
		}
		out = append(out, adapted)
	}
	for name, why := range skipped {
		logger.V(1).Info("ignoring nodepool", "nodepool", name, "reason", why)
	}
	return out, unavailable, skipped, nil
}

// noCompatibleInstanceTypesEvent is upstream's warning on a NodePool whose
// requirements leave it no instance type, at most once a minute per NodePool.
func noCompatibleInstanceTypesEvent(np *v1.NodePool, minValues bool) events.Event {
	msg := "NodePool requirements filtered out all compatible available instance types"
	if minValues {
		msg += " due to minValues incompatibility"
	}
	return events.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: EventNoCompatibleInstanceTypes, Message: msg,
		DedupeValues: []string{string(np.UID)}, DedupeTimeout: time.Minute}
}

// notReadyCause names the first False condition Ready depends on, with its reason
// and message ("NodeClassReady=False (NodeClassNotFound: ...)"), or Ready's own.
func notReadyCause(np *v1.NodePool, ready *status.Condition) string {
	c := ready
	for _, cond := range np.StatusConditions().List() {
		if cond.Type != ready.Type && cond.IsFalse() {
			c = &cond
			break
		}
	}
	return conditionCause(c.Type, c.Reason, c.Message)
}

func conditionCause(condType, reason, message string) string {
	return fmt.Sprintf("%s=False (%s: %s)", condType, reason, message)
}

// nodeClassNotReady returns why the NodePool's NodeClass cannot be used, or "",
// in the words of the NodePool's NodeClassReady condition (the readiness
// controller may not have caught up yet).
func (p *Provisioner) nodeClassNotReady(ctx context.Context, np *v1.NodePool) (string, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return conditionCause(v1.ConditionTypeNodeClassReady, "NodeClassNotFound", "nodeClassRef is not set"), nil
	}
	for _, proto := range p.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(proto, p.kube.Scheme())
		if err != nil {
			return "", err
		}
		if gvk.Group != ref.Group || gvk.Kind != ref.Kind {
			continue
		}
		nc := proto.DeepCopyObject().(client.Object)
		if err := p.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
			if apierrors.IsNotFound(err) {
				return conditionCause(v1.ConditionTypeNodeClassReady, "NodeClassNotFound", fmt.Sprintf("%s %q not found", ref.Kind, ref.Name)), nil
			}
			return "", err
		}
		if so, ok := nc.(status.Object); ok && !so.StatusConditions().IsTrue(status.ConditionReady) {
			return conditionCause(v1.ConditionTypeNodeClassReady, "NodeClassNotReady", fmt.Sprintf("%s %q is not ready", ref.Kind, ref.Name)), nil
		}
		return "", nil
	}
	return conditionCause(v1.ConditionTypeNodeClassReady, "NodeClassNotFound",
		fmt.Sprintf("NodeClass kind %s/%s is not supported by the %s cloud provider", ref.Group, ref.Kind, p.cloudProvider.Name())), nil
}

// remaining is the NodePool's limits minus its usage; nil when it has no limits.
// A NodeClaim not launched yet counts at the largest capacity among the instance
// types it may still launch as, so two batches in a row cannot overshoot a limit.
func (p *Provisioner) remaining(np *v1.NodePool, its []*scheduling.InstanceType) corev1.ResourceList {
	if len(np.Spec.Limits) == 0 {
		return nil
	}
	byName := make(map[string]*scheduling.InstanceType, len(its))
	for _, it := range its {
		byName[it.Name] = it
	}
	usage := p.cluster.NodePoolUsage(np.Name, func(sn *state.StateNode) corev1.ResourceList {
		if sn.Node != nil || sn.NodeClaim == nil || len(sn.NodeClaim.Status.Capacity) > 0 {
			return nil
		}
		return maxCapacity(sn.NodeClaim, byName)
	})
	out := corev1.ResourceList{}
	for name, limit := range np.Spec.Limits {
		r := limit.DeepCopy()
		if u, ok := usage[name]; ok {
			r.Sub(u)
		}
		if r.Sign() < 0 {
			r = *resource.NewQuantity(0, r.Format)
		}
		out[name] = r
	}
	return out
}

func maxCapacity(nc *v1.NodeClaim, its map[string]*scheduling.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range nc.Spec.Requirements {
		if r.Key != corev1.LabelInstanceTypeStable || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		for _, name := range r.Values {
			it, ok := its[name]
			if !ok {
				continue
			}
			for n, q := range it.Capacity {
				if cur, ok := out[n]; !ok || q.Cmp(cur) > 0 {
					out[n] = q.DeepCopy()
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// adaptNodePool renders a v1 NodePool in the solver's model.
func adaptNodePool(np *v1.NodePool, its []*scheduling.InstanceType, remaining corev1.ResourceList) *scheduling.NodePool {
	var reqs []scheduling.Requirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		req := scheduling.NewRequirement(r.Key, r.Operator, r.Values...)
		req.MinValues = r.MinValues
		reqs = append(reqs, req)
	}
	weight := int32(0)
	if np.Spec.Weight != nil {
		weight = *np.Spec.Weight
	}
	labels := np.Spec.Template.ObjectMeta.Labels
	// The NodeClass label is on every NodeClaim of the pool, so a pod may select it.
	if k, v, ok := nodeClassLabel(np); ok {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return &scheduling.NodePool{
		Name:          np.Name,
		Weight:        weight,
		Requirements:  scheduling.NewRequirements(reqs...),
		Labels:        labels,
		Taints:        np.Spec.Template.Spec.Taints,
		StartupTaints: np.Spec.Template.Spec.StartupTaints,
		Remaining:     remaining,
		InstanceTypes: its,
	}
}

// wellKnownLabels: upstream's well-known keys plus every key an instance type
// defines (a provider's own labels, e.g. karpenter.kwok.sh/instance-family), which
// a pod may select although no NodePool mentions them.
func wellKnownLabels(pools []*scheduling.NodePool) []string {
	seen := map[string]bool{}
	out := append([]string(nil), scheduling.DefaultWellKnownLabels...)
	for _, k := range out {
		seen[k] = true
	}
	for _, np := range pools {
		for _, it := range np.InstanceTypes {
			for _, k := range it.Requirements.Keys() {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// creator is the client NodeClaims are created with.
func (p *Provisioner) creator() client.Client {
	if p.opts.CreateClient != nil {
		return p.opts.CreateClient
	}
	return p.kube
}

// maxParallelCreates bounds the NodeClaim creates in flight for one decision.
const maxParallelCreates = 100

// create writes the NodeClaims in parallel. Each is recorded in cluster state as
// soon as the API server accepted it, so the next batch counts it as capacity even
// before the watch delivers it.
func (p *Provisioner) create(ctx context.Context, pools map[string]*v1.NodePool, claims []*scheduling.NewClaim) ([]*v1.NodeClaim, error) {
	var (
		mu      sync.Mutex
		created []*v1.NodeClaim
		errs    []error
		wg      sync.WaitGroup
		// Every NodeClaim of a decision at once, up to a bound: each create
		// waits on the API server, so ten at a time made a 16-claim batch
		// two round trips long.
		sem = make(chan struct{}, maxParallelCreates)
	)
	for _, c := range claims {
		np, ok := pools[c.NodePool.Name]
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(c *scheduling.NewClaim) {
			defer wg.Done()
			defer func() { <-sem }()
			nc := NewNodeClaim(np, c)
			start := time.Now()
			err := p.creator().Create(ctx, nc)
			apiTime := time.Since(start)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("creating nodeclaim for nodepool %s: %w", np.Name, err))
				mu.Unlock()
				for _, pod := range capacitybuffer.Real(c.Pods) {
					p.recorder.Eventf(pod, corev1.EventTypeWarning, EventFailedScheduling, "Failed to schedule pod, creating nodeclaim: %s", err)
				}
				return
			}
			p.cluster.UpdateNodeClaim(nc)
			p.cluster.Nominate(nc.Name)
			p.plans.record(nc.Name, c.Pods)
			if real := capacitybuffer.Real(c.Pods); len(real) > 0 {
				p.loops.launched(nc.Name, real)
			}
			metrics.NodeClaimsCreatedTotal.WithLabelValues(ReasonProvisioning, np.Name, strconv.FormatBool(c.MinValuesRelaxed)).Inc()
			for _, pod := range capacitybuffer.Real(c.Pods) {
				if p.nominations.allow(pod) {
					p.recorder.Eventf(pod, corev1.EventTypeNormal, EventNominated, "Pod should schedule on: nodeclaim/%s", nc.Name)
				}
			}
			log.FromContext(ctx).Info("created nodeclaim", "nodeclaim", nc.Name, "nodepool", np.Name,
				"requests", scheduling.FormatResources(nc.Spec.Resources.Requests), "instance-types", instanceTypeSummary(c), "pods", len(c.Pods), "api-duration", apiTime.String(), "api-start", start)
			mu.Lock()
			created = append(created, nc)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	sort.Slice(created, func(i, j int) bool { return created[i].Name < created[j].Name })
	return created, errors.Join(errs...)
}

func instanceTypeSummary(c *scheduling.NewClaim) string {
	n := len(c.InstanceTypes)
	if n == 0 {
		return ""
	}
	names := ""
	for i, it := range c.InstanceTypes {
		if i == 5 {
			return fmt.Sprintf("%s and %d other(s)", names, n-5)
		}
		if i > 0 {
			names += ", "
		}
		names += it.Name
	}
	return names
}

// exportNodePoolMetrics refreshes karpenter_nodepools_usage and _limit.
func (p *Provisioner) exportNodePoolMetrics() {
	ExportNodePoolMetrics(p.cluster)
}

// ExportNodePoolMetrics sets karpenter_nodepools_usage and _limit from cluster state.
func ExportNodePoolMetrics(cluster *state.Cluster) {
	NodePoolUsage.Reset()
	NodePoolLimit.Reset()
	for _, np := range cluster.NodePools() {
		for name, q := range cluster.NodePoolUsage(np.Name, nil) {
			NodePoolUsage.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
		}
		for name, q := range np.Spec.Limits {
			NodePoolLimit.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
		}
	}
}

// CreateStatic creates n NodeClaims of the static NodePool np, each for any
// instance type the pool admits (cheapest first), through the same path as
// the provisioner's own: recorded in cluster state at once, so that the next
// count includes them, and counted in karpenter_nodeclaims_created_total.
func (p *Provisioner) CreateStatic(ctx context.Context, np *v1.NodePool, n int) ([]*v1.NodeClaim, error) {
	claim, err := p.StaticClaim(ctx, np)
	if err != nil {
		return nil, err
	}
	if claim == nil {
		p.publisher.Publish(noCompatibleInstanceTypesEvent(np, false))
		return nil, fmt.Errorf("nodepool %s admits no instance type with an available offering", np.Name)
	}
	claims := make([]*scheduling.NewClaim, n)
	for i := range claims {
		claims[i] = claim
	}
	return p.create(ctx, map[string]*v1.NodePool{np.Name: np}, claims)
}

// StaticClaim is the NodeClaim a static NodePool launches (any instance type
// it admits, cheapest first), nil when it admits none. Disruption replaces a
// drifted node of the pool with it.
func (p *Provisioner) StaticClaim(ctx context.Context, np *v1.NodePool) (*scheduling.NewClaim, error) {
	its, err := p.cloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err)
	}
	return StaticClaimOf(np, its), nil
}

// StaticClaimOf is StaticClaim over instance types already fetched.
func StaticClaimOf(np *v1.NodePool, its []*scheduling.InstanceType) *scheduling.NewClaim {
	claim, ok := adaptNodePool(np, its, nil).StaticClaim(0)
	if !ok {
		return nil
	}
	return claim
}
