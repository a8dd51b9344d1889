package disrupter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Timing (upstream's figures).
const (
	// PollPeriod between passes that decided nothing.
	PollPeriod = 10 * time.Second
	// ValidationDelay between deciding an emptiness or consolidation command
	// and re-checking it: pods arriving meanwhile (a rollout, a scale-up) show
	// that the decision was taken on a passing moment.
	ValidationDelay = 15 * time.Second
	// syncRetry: how soon a pass is retried while cluster state is not synced.
	syncRetry = time.Second
)

// Options of the controller.
type Options struct {
	// SpotToSpotConsolidation is the feature gate.
	SpotToSpotConsolidation bool
	// DisableRepackConsolidation is the setting of that name: consolidation
	// makes upstream's moves only.
	DisableRepackConsolidation bool
	// TerminateFirstDrift is the feature gate (see
	// disruption.Options.TerminateFirstDrift).
	TerminateFirstDrift bool
	// TerminateFirstRepair is the feature gate (see
	// disruption.Options.TerminateFirstRepair).
	TerminateFirstRepair bool
	// PodDeletionCostManagement is the feature gate (see
	// disruption.Options.PodDeletionCostManagement).
	PodDeletionCostManagement bool
	// NodeRepair is the feature gate: unhealthy nodes are repaired as the
	// cloud provider's RepairPolicies say (see disruption.MethodRepair).
	NodeRepair bool
	// MaxSimulationWork bounds a pass's simulation (0: the core's default).
	MaxSimulationWork int
	// PollPeriod and ValidationDelay override the defaults (0: default).
	PollPeriod      time.Duration
	ValidationDelay time.Duration
}

// Controller runs disruption passes (see the package documentation).
type Controller struct {
	kube          client.Client
	cluster       *state.Cluster
	provisioner   *provisioning.Provisioner
	cloudProvider cloudprovider.CloudProvider
	queue         *orchestration.Queue
	recorder      record.EventRecorder
	publisher     events.Publisher
	clock         clock.Clock
	opts          Options
	// cache keeps the solver's NodePool preparation across passes.
	cache *scheduling.Cache
	// reboots are the reboots repair requested (see rebootHistory).
	reboots *rebootHistory
}

// NewController wires the controller. The recorder is wrapped so that an
// explanation repeated every pass is recorded once per dedupe window.
func NewController(kube client.Client, cluster *state.Cluster, prov *provisioning.Provisioner, cp cloudprovider.CloudProvider,
	queue *orchestration.Queue, recorder record.EventRecorder, clk clock.Clock, opts Options) *Controller {
	if opts.PollPeriod == 0 {
		opts.PollPeriod = PollPeriod
	}
	if opts.ValidationDelay == 0 {
		opts.ValidationDelay = ValidationDelay
	}
	if recorder == nil {
		recorder = &record.FakeRecorder{}
	}
	return &Controller{
		kube: kube, cluster: cluster, provisioner: prov, cloudProvider: cp, queue: queue,
		recorder: events.NewDedupingRecorder(recorder, clk), publisher: events.NewPublisher(recorder, clk), clock: clk, opts: opts, cache: scheduling.NewCache(),
		reboots: &rebootHistory{at: map[types.UID][]time.Time{}},
	}
}

// NeedLeaderElection: only the leader disrupts.
func (c *Controller) NeedLeaderElection() bool { return true }

var errNotSynced = errors.New("cluster state is not synced")

// Start runs passes until ctx ends (a manager Runnable): right after a pass
// that handed a command to the queue, PollPeriod after one that did not.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("disruption")
	ctx = log.IntoContext(ctx, logger)
	for {
		acted, err := c.Reconcile(ctx)
		wait := c.opts.PollPeriod
		switch {
		case errors.Is(err, errNotSynced):
			wait = syncRetry
		case err != nil:
			logger.Error(err, "disruption pass failed")
		case acted:
			wait = 0
		}
		if ctx.Err() != nil {
			return nil
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-c.clock.After(wait):
			}
		}
	}
}

// Reconcile is one pass: snapshot, decide, explain, and (after validation for
// emptiness and consolidation) hand the command to the queue. It reports
// whether a command was started.
func (c *Controller) Reconcile(ctx context.Context) (bool, error) {
	synced, err := c.cluster.Synced(ctx)
	if err != nil {
		return false, err
	}
	if !synced {
		return false, errNotSynced
	}
	s, err := c.snapshot(ctx)
	if err != nil {
		return false, err
	}
	pass := disruption.NewPass(s.in)
	var d *disruption.Decision
	for _, m := range disruption.MethodsFor(s.in.Options) {
		start := c.clock.Now()
		d = pass.Method(m)
		EvaluationDuration.WithLabelValues(disruption.MetricReason(m.Reason()), m.ConsolidationType()).Observe(c.clock.Since(start).Seconds())
		if d != nil {
			break
		}
	}
	res := pass.Result()
	c.export(res)
	c.explain(ctx, s, res)
	if d == nil {
		return false, nil
	}
	return c.act(ctx, d)
}

// act validates the decision (for methods that are Validated: not drift, which
// acts on a condition that does not flicker) and starts it.
func (c *Controller) act(ctx context.Context, d *disruption.Decision) (bool, error) {
	logger := log.FromContext(ctx)
	ct := d.Method.ConsolidationType()
	s := (*snapshot)(nil)
	if d.Method.Validated() {
		select {
		case <-ctx.Done():
			return false, nil
		case <-c.clock.After(c.opts.ValidationDelay):
		}
		var err error
		if s, err = c.snapshot(ctx); err != nil {
			return false, err
		}
		// A delete of a method that Narrows (multi-node consolidation) keeps its
		// candidates that are still valid (see disruption.ValidateNarrowing); any
		// other decision stands or falls whole.
		v, ok, why := disruption.ValidateNarrowing(s.in, d)
		if !ok {
			FailedValidationsTotal.WithLabelValues(ct).Inc()
			logger.Info("abandoning disruption decision: no longer valid", "method", d.Method.String(), "candidates", d.CandidateNames(), "reason", why)
			return false, nil
		}
		if len(v.Candidates) < len(d.Candidates) {
			logger.Info("narrowed disruption decision to the candidates still valid", "method", d.Method.String(),
				"candidates", len(d.Candidates), "kept", len(v.Candidates))
		}
		d = v
	} else {
		var err error
		if s, err = c.snapshot(ctx); err != nil {
			return false, err
		}
	}
	if d.Reboot {
		return c.reboot(ctx, d)
	}
	cmd, err := c.command(s, d)
	if err != nil {
		return false, err
	}
	if err := c.queue.StartCommand(ctx, cmd); err != nil {
		return false, fmt.Errorf("starting disruption of %v: %w", cmd.CandidateNames(), err)
	}
	DecisionsTotal.WithLabelValues(string(d.Action()), disruption.MetricReason(d.Method.Reason()), ct).Inc()
	c.consolidationApproved(s, d)
	counted := map[string]bool{}
	for _, nc := range cmd.Candidates {
		if np := nc.Labels[v1.NodePoolLabelKey]; !counted[np] {
			counted[np] = true
			DecisionsByNodePoolTotal.WithLabelValues(np, string(d.Action()), disruption.MetricReason(d.Method.Reason()), ct).Inc()
			if d.TerminateFirstReason != "" {
				TerminateFirstDecisionsTotal.WithLabelValues(np, disruption.MetricReason(d.Method.Reason()), d.TerminateFirstReason).Inc()
			}
		}
	}
	return true, nil
}

// command turns a decision into the queue's Command, with the candidates'
// NodeClaims as the latest snapshot shows them and replacement NodeClaims built
// as the provisioner builds its own.
func (c *Controller) command(s *snapshot, d *disruption.Decision) (*orchestration.Command, error) {
	cmd := &orchestration.Command{
		Method:      d.Method,
		Decision:    d.Action(),
		Explanation: d.Explanation,
		Repair:      d.Repair,
	}
	byName := map[string]*disruption.Node{}
	for _, n := range s.in.Nodes {
		byName[n.Name] = n
	}
	for _, cand := range d.Candidates {
		n, ok := byName[cand.Name]
		if !ok || n.NodeClaim == nil {
			return nil, fmt.Errorf("candidate %s is gone", cand.Name)
		}
		cmd.Candidates = append(cmd.Candidates, n.NodeClaim)
		m := orchestration.CandidateMetrics{ReschedulablePods: len(n.ReschedulablePods())}
		if np, ok := s.nodePools[n.NodeClaim.Labels[v1.NodePoolLabelKey]]; ok {
			m.ConsolidationPolicy = np.Spec.Disruption.ConsolidationPolicy
		}
		if cmd.Metrics == nil {
			cmd.Metrics = map[string]orchestration.CandidateMetrics{}
		}
		cmd.Metrics[n.NodeClaim.Name] = m
	}
	for _, r := range d.Replacements {
		np, ok := s.nodePools[r.NodePool.Name]
		if !ok {
			return nil, fmt.Errorf("nodepool %s of a replacement is gone", r.NodePool.Name)
		}
		cmd.Replacements = append(cmd.Replacements, provisioning.NewNodeClaim(np, r))
	}
	return cmd, nil
}

// EventConsolidationApproved is the event a consolidation of a Balanced
// NodePool records once started, with its score.
const EventConsolidationApproved = "ConsolidationApproved"

// consolidationApproved records ConsolidationApproved for the Balanced pools
// of a started consolidation, as upstream: on the node and its NodeClaim when
// it moves one node, on the NodePool when it moves several.
func (c *Controller) consolidationApproved(s *snapshot, d *disruption.Decision) {
	for _, sc := range d.Scores {
		if !sc.Scored {
			continue
		}
		msg := sc.String()
		if len(d.Candidates) == 1 {
			n := d.Candidates[0]
			if n.Node != nil {
				c.recorder.Event(n.Node, corev1.EventTypeNormal, EventConsolidationApproved, msg)
			}
			if n.NodeClaim != nil {
				c.recorder.Event(n.NodeClaim, corev1.EventTypeNormal, EventConsolidationApproved, msg)
			}
			continue
		}
		if np, ok := s.nodePools[sc.NodePool]; ok {
			c.recorder.Event(np, corev1.EventTypeNormal, EventConsolidationApproved, msg)
		}
	}
}

// export refreshes the pass's gauges and counters.
func (c *Controller) export(res *disruption.Result) {
	exportMoves(res.Moves)
	for _, r := range disruption.ReasonsFor(disruption.Options{NodeRepair: c.opts.NodeRepair}) {
		EligibleNodes.WithLabelValues(disruption.MetricReason(r)).Set(float64(res.Eligible[r]))
	}
	// Reset: a NodePool deleted since the last pass leaves no stale series.
	NodePoolAllowedDisruptions.Reset()
	NodePoolNodesConsumingBudgets.Reset()
	for _, b := range res.Budgets {
		limit := float64(b.Limit)
		if b.Limit < 0 {
			// No budget applies: upstream reports the largest int32.
			limit = math.MaxInt32
		}
		// Upstream labels these two gauges with the reason as the API spells it.
		NodePoolAllowedDisruptions.WithLabelValues(b.NodePool, string(b.Reason)).Set(limit)
		NodePoolNodesConsumingBudgets.WithLabelValues(b.NodePool, string(b.Reason)).Set(float64(b.Disrupting))
	}
	for _, m := range res.TimedOut {
		if ct := m.ConsolidationType(); ct != "" {
			ConsolidationTimeoutsTotal.WithLabelValues(ct).Inc()
		}
	}
}
