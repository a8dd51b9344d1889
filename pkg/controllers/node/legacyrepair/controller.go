// Package legacyrepair is upstream's older node repair controller, run in
// place of the repair disruption method when the NodeRepair feature gate is on
// and --legacy-node-repair (LEGACY_NODE_REPAIR) asks for it.
//
// It only replaces: each cloud provider repair policy whose action is to
// replace the node applies, a node whose condition matches one for longer
// than its toleration has its NodeClaim deleted at once with a termination
// timestamp of now (its drain does not wait for PDBs or do-not-disrupt), and
// nothing is repaired in a NodePool (or, for a NodeClaim of no NodePool, the
// cluster) where more than 20% of the nodes match a policy. It knows nothing
// of budgets, priorities, reboots, terminate-first, policy drain bounds or
// karpenter.sh/do-not-repair: those are the repair method's.
package legacyrepair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Name of the controller (upstream's).
const Name = "node.health"

// AllowedUnhealthyFraction: above this share of unhealthy nodes in a NodePool
// (rounded up, as upstream's 20%) nothing of it is repaired.
const AllowedUnhealthyFraction = 0.2

// BlockedRequeue is how soon a blocked repair is tried again (upstream's).
const BlockedRequeue = 5 * time.Minute

// EventNodeRepairBlocked is the warning on a Node whose repair the 20% rule
// holds back (upstream's reason).
const EventNodeRepairBlocked = "NodeRepairBlocked"

type policy struct {
	cloudprovider.RepairPolicy
	reason *regexp.Regexp
}

func (p policy) matches(c corev1.NodeCondition) bool {
	return c.Type == p.ConditionType && c.Status == p.ConditionStatus && (p.reason == nil || p.reason.MatchString(c.Reason))
}

// Controller replaces unhealthy nodes.
type Controller struct {
	kube      client.Client
	clock     clock.Clock
	publisher events.Publisher
	policies  []policy
}

// NewController keeps the provider's policies that replace the node (an
// empty action is replacement). A reason regular expression that does not
// compile fails here, naming the policy.
func NewController(kube client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{kube: kube, clock: clk, publisher: events.NewPublisher(recorder, clk)}
	for i, rp := range cp.RepairPolicies() {
		if rp.Action != "" && rp.Action != cloudprovider.ReplaceNode {
			continue
		}
		p := policy{RepairPolicy: rp}
		if rp.ReasonRegex != "" {
			re, err := regexp.Compile(rp.ReasonRegex)
			if err != nil {
				return nil, fmt.Errorf("repair policy %d (%s=%s): reason regex %q: %w", i, rp.ConditionType, rp.ConditionStatus, rp.ReasonRegex, err)
			}
			p.reason = re
		}
		c.policies = append(c.policies, p)
	}
	return c, nil
}

// Unhealthy is the node's matching condition that tolerates the least (its
// last transition plus the policy's toleration comes first), and when that
// is; ok is false when no policy matches.
func (c *Controller) Unhealthy(node *corev1.Node) (cond corev1.NodeCondition, due time.Time, ok bool) {
	for _, p := range c.policies {
		for _, nc := range node.Status.Conditions {
			if !p.matches(nc) {
				continue
			}
			at := nc.LastTransitionTime.Add(p.TolerationDuration)
			if !ok || at.Before(due) {
				cond, due, ok = nc, at, true
			}
		}
	}
	return cond, due, ok
}

// Reconcile repairs one node once its toleration has passed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond, due, ok := c.Unhealthy(node)
	if !ok {
		return reconcile.Result{}, nil
	}
	if now := c.clock.Now(); now.Before(due) {
		return reconcile.Result{RequeueAfter: due.Sub(now)}, nil
	}
	nc, err := c.nodeClaim(ctx, node)
	if err != nil || nc == nil {
		return reconcile.Result{}, err
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("Node", node.Name, "NodeClaim", nc.Name, "condition", cond.Type, "status", cond.Status)
	pool := nc.Labels[v1.NodePoolLabelKey]
	var scope []client.ListOption
	where := "the cluster"
	if pool != "" {
		scope, where = []client.ListOption{client.MatchingLabels{v1.NodePoolLabelKey: pool}}, "nodepool "+pool
	}
	healthy, err := c.healthy(ctx, scope...)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !healthy {
		msg := fmt.Sprintf("more than 20%% of the nodes of %s are unhealthy", where)
		logger.Info("node repair blocked: " + msg)
		c.publisher.Publish(events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventNodeRepairBlocked, Message: msg,
			DedupeValues: []string{string(node.UID)}, DedupeTimeout: 15 * time.Minute})
		return reconcile.Result{RequeueAfter: BlockedRequeue}, nil
	}
	// A termination timestamp of now: the drain deletes the pods at once.
	if at, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; !ok || !c.passed(at) {
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = c.clock.Now().UTC().Format(time.RFC3339)
		if err := c.kube.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if err := c.kube.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	logger.Info("deleting unhealthy node")
	reschedulable := 0
	if pods, err := podindex.OnNode(ctx, c.kube, node.Name); err == nil {
		for _, p := range pods {
			if !scheduling.FollowsItsNode(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				reschedulable++
			}
		}
	}
	metrics.CountDisrupted(nc, disruption.MetricReason(v1.DisruptionReasonUnhealthy), "", reschedulable)
	orchestration.CountUnhealthyDisrupted(nc, cond.Type, metrics.TerminationModeForceful)
	return reconcile.Result{}, nil
}

func (c *Controller) passed(at string) bool {
	t, err := time.Parse(time.RFC3339, at)
	return err == nil && !t.After(c.clock.Now())
}

// healthy: no more than 20% (rounded up) of the nodes in scope match a
// policy, toleration or not.
func (c *Controller) healthy(ctx context.Context, scope ...client.ListOption) (bool, error) {
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, scope...); err != nil {
		return false, err
	}
	unhealthy := 0
	for i := range nodes.Items {
		if _, _, ok := c.Unhealthy(&nodes.Items[i]); ok {
			unhealthy++
		}
	}
	return unhealthy <= int(math.Ceil(AllowedUnhealthyFraction*float64(len(nodes.Items)))), nil
}

// nodeClaim is the NodeClaim of the node's provider ID (nil when none, or
// when two claim the node: nothing is repaired by guess).
func (c *Controller) nodeClaim(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	nc, err := lifecycle.NodeClaimForNode(ctx, c.kube, node)
	var dup *lifecycle.DuplicateNodeClaimsError
	if errors.As(err, &dup) {
		return nil, nil
	}
	return nc, err
}

// Register watches the nodes Karpenter launched, on a change of their
// conditions (a transition or a status change).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	managed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[v1.NodePoolLabelKey]
		return ok
	})
	conditionsChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, b := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		if len(a.Status.Conditions) != len(b.Status.Conditions) {
			return true
		}
		for i := range a.Status.Conditions {
			x, y := a.Status.Conditions[i], b.Status.Conditions[i]
			if x.Type != y.Type || x.Status != y.Status || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
				return true
			}
		}
		return false
	}}
	return builder.ControllerManagedBy(mgr).Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(managed, conditionsChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.Reconcile))
}
