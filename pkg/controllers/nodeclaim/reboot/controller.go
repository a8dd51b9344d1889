// Package reboot carries out the reboots node repair requests. Repair (the
// disruption controller) commits a reboot by setting the NodeClaim's Rebooting
// condition True with reason RebootRequested; from there this controller:
//
//  1. taints the Node karpenter.sh/rebooting:NoSchedule and drains it, for at
//     most the karpenter.sh/reboot-termination-grace-period annotation ("0s":
//     no drain; absent: until the pods are gone; pods still there when it
//     ends stay through the reboot, none is deleted);
//  2. records the Node's boot ID in karpenter.sh/reboot-pre-boot-id and asks
//     the cloud provider to reboot the instance (retried for IssuanceTimeout),
//     then moves Rebooting to RebootIssued and Initialized to Unknown, and
//     removes the karpenter.sh/initialized label: initialization holds for
//     one boot;
//  3. waits for the Node to report a different boot ID (the taint comes off
//     then) and be Ready, for at most ObservationWindow;
//  4. ends the reboot: Rebooting False with RebootSucceeded, or with
//     RebootFailed, in which case the NodeClaim is deleted, so that the node
//     is replaced, its drain bounded as the reboot's was (except when the
//     request itself was invalid).
//
// A boot ID that changed before the provider answered counts as issued, so a
// restart never reboots a node twice for one request. Each end is counted in
// karpenter_nodes_reboots_total and timed in the two duration histograms.
package reboot

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
)

// Name of the controller.
const Name = "nodeclaim.reboot"

// Timing (upstream's figures).
const (
	// ObservationWindow bounds the wait, from the reboot being issued, for
	// the node to come back with a new boot ID and Ready.
	ObservationWindow = 20 * time.Minute
	// IssuanceTimeout bounds the retries of the provider's reboot call after
	// the drain.
	IssuanceTimeout = 5 * time.Minute
	// PollInterval between checks of a reboot in progress.
	PollInterval = 15 * time.Second
	// MinDrainTime: a drained reboot waits at least this long from its
	// request, so that pods bound just before the taint are drained too.
	MinDrainTime = 5 * time.Second
)

// Event reasons on the NodeClaim (upstream's).
const (
	// EventRebootObserved: the node reported a new boot ID.
	EventRebootObserved = "RebootObserved"
	// EventRebootFailed: the reboot failed; the message says why.
	EventRebootFailed = "RebootFailed"
)

// Controller drives NodeClaims whose Rebooting condition is True.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	drainer       *termination.Drainer
	clock         clock.Clock
	recorder      record.EventRecorder

	// issuing holds, per NodeClaim, when this process started asking the
	// provider (the start of IssuanceTimeout; a restart starts it again).
	mu      sync.Mutex
	issuing map[types.UID]time.Time
}

// NewController returns the controller; it drains with the termination
// controller's drainer. recorder may be nil.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, drainer *termination.Drainer, clk clock.Clock, recorder record.EventRecorder) *Controller {
	if recorder == nil {
		recorder = &record.FakeRecorder{}
	}
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, drainer: drainer, clock: clk, recorder: recorder, issuing: map[types.UID]time.Time{}}
}

// Register adds the controller to the manager: it watches NodeClaims that
// have a Rebooting condition.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	has := func(o client.Object) bool {
		nc, ok := o.(*v1.NodeClaim)
		if !ok {
			return false
		}
		for i := range nc.Status.Conditions {
			if nc.Status.Conditions[i].Type == v1.ConditionTypeRebooting {
				return true
			}
		}
		return false
	}
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return has(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return has(e.ObjectNew) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return has(e.Object) },
			GenericFunc: func(e event.GenericEvent) bool { return has(e.Object) },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// Reconcile moves a reboot one step on.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := nc.StatusConditions().Get(v1.ConditionTypeRebooting)
	if cond == nil || !cond.IsTrue() {
		c.forgetIssuing(nc.UID)
		return reconcile.Result{}, nil
	}
	if nc.DeletionTimestamp != nil {
		// Termination owns it now.
		c.forgetIssuing(nc.UID)
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", nc.Name, "controller", Name))
	node, err := c.node(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		// The Node may come back (a kubelet re-registering); the reboot
		// fails once its phase's deadline passes, bounded from the request
		// while nothing was issued yet.
		deadline, ok := c.deadline(nc)
		if !ok {
			deadline = requestedAt(nc).Add(IssuanceTimeout)
		}
		if c.clock.Now().After(deadline) {
			result, msg := deadlineResult(nc)
			return c.fail(ctx, nc, nil, result, msg)
		}
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	if deadline, ok := c.deadline(nc); ok && c.clock.Now().After(deadline) {
		result, msg := deadlineResult(nc)
		return c.fail(ctx, nc, node, result, msg)
	}
	switch cond.Reason {
	case v1.RebootReasonRequested:
		return c.requested(ctx, nc, node)
	case v1.RebootReasonIssued:
		return c.issued(ctx, nc, node)
	}
	return reconcile.Result{}, nil
}

// requested taints and drains the node, then issues the reboot.
func (c *Controller) requested(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	bound, err := DrainBound(nc)
	if err != nil {
		return c.fail(ctx, nc, node, ResultInvalidRequest, fmt.Sprintf("invalid reboot request: %v", err))
	}
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	preBootID, recorded := nc.Annotations[v1.RebootPreBootIDAnnotationKey]
	if recorded {
		// Asked before (a restart or a retry): a different boot ID means the
		// reboot happened, so it is not asked again.
		if node.Status.NodeInfo.BootID != preBootID {
			return c.markIssued(ctx, nc, node)
		}
		c.startIssuing(nc.UID)
	} else {
		if done, res, err := c.drain(ctx, nc, node, bound); err != nil || !done {
			return res, err
		}
		c.startIssuing(nc.UID)
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[v1.RebootPreBootIDAnnotationKey] = node.Status.NodeInfo.BootID
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := c.cloudProvider.Reboot(ctx, nc, operationID(nc)); err != nil {
		switch {
		case cloudprovider.IsNodeRebootNotImplementedError(err):
			return c.fail(ctx, nc, node, ResultProviderError, fmt.Sprintf("the %s cloud provider cannot reboot nodes", c.cloudProvider.Name()))
		case cloudprovider.IsNodeRebootFailedError(err), cloudprovider.IsNodeClaimNotFoundError(err):
			return c.fail(ctx, nc, node, ResultProviderError, fmt.Sprintf("the cloud provider refused the reboot: %v", err))
		}
		// Retried until IssuanceTimeout.
		return reconcile.Result{}, fmt.Errorf("issuing reboot: %w", err)
	}
	log.FromContext(ctx).Info("issued node reboot", "node", node.Name, "preBootID", node.Status.NodeInfo.BootID)
	return c.markIssued(ctx, nc, node)
}

// drain evicts the node's pods until they are gone or the bound elapsed
// (counted from the request); it reports whether the reboot may go ahead.
func (c *Controller) drain(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, bound *time.Duration) (bool, reconcile.Result, error) {
	if bound != nil && *bound == 0 {
		return true, reconcile.Result{}, nil
	}
	start := requestedAt(nc)
	var deadline *time.Time
	if bound != nil {
		d := start.Add(max(*bound, MinDrainTime))
		deadline = &d
	}
	// No deadline is handed to the drainer: at the bound, pods still there
	// ride the reboot rather than being deleted.
	st, err := c.drainer.Drain(ctx, node, nc, nil)
	if err != nil {
		return false, reconcile.Result{}, fmt.Errorf("draining node %s: %w", node.Name, err)
	}
	now := c.clock.Now()
	if !st.Drained() {
		if deadline == nil {
			return false, reconcile.Result{RequeueAfter: PollInterval}, nil
		}
		if left := deadline.Sub(now); left > 0 {
			return false, reconcile.Result{RequeueAfter: min(PollInterval, left)}, nil
		}
		log.FromContext(ctx).Info("drain bound elapsed, the remaining pods stay through the reboot", "node", node.Name, "waiting", st.Waiting)
		return true, reconcile.Result{}, nil
	}
	if left := start.Add(MinDrainTime).Sub(now); left > 0 {
		return false, reconcile.Result{RequeueAfter: left}, nil
	}
	return true, reconcile.Result{}, nil
}

// markIssued moves Rebooting to RebootIssued and Initialized to Unknown, and
// unlabels the node initialized.
func (c *Controller) markIssued(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	stored := nc.DeepCopy()
	conds := c.conditions(nc)
	conds.SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonIssued, conds.Get(v1.ConditionTypeRebooting).Message)
	conds.SetUnknown(v1.ConditionTypeInitialized, v1.RebootReasonRebooting, "node is rebooting")
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := c.unlabelInitialized(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: PollInterval}, nil
}

// issued waits for a new boot ID and Ready.
func (c *Controller) issued(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	if err := c.unlabelInitialized(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	if node.Status.NodeInfo.BootID == nc.Annotations[v1.RebootPreBootIDAnnotationKey] {
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	removed, err := c.untaint(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if removed {
		c.recorder.Event(nc, corev1.EventTypeNormal, EventRebootObserved,
			fmt.Sprintf("Node %s booted again (boot ID %s); waiting for it to be Ready", node.Name, node.Status.NodeInfo.BootID))
	}
	if !nodeReady(node) {
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	total := c.clock.Since(requestedAt(nc))
	issuedAt, hasIssued := issuedAt(nc)
	if err := c.end(ctx, nc, v1.RebootReasonSucceeded, "node rebooted and is Ready again"); err != nil {
		return reconcile.Result{}, err
	}
	observe(ResultSucceeded, total)
	if hasIssued {
		RebootRecoveryDurationSeconds.Observe(c.clock.Since(issuedAt).Seconds())
	}
	log.FromContext(ctx).Info("node reboot succeeded", "node", node.Name, "bootID", node.Status.NodeInfo.BootID)
	return reconcile.Result{}, nil
}

// fail ends the reboot as failed: the NodeClaim is deleted, to be replaced,
// unless the request itself was invalid.
func (c *Controller) fail(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, result, msg string) (reconcile.Result, error) {
	if node != nil {
		if _, err := c.untaint(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	total := c.clock.Since(requestedAt(nc))
	if result == ResultInvalidRequest {
		if err := c.end(ctx, nc, v1.RebootReasonFailed, msg); err != nil {
			return reconcile.Result{}, err
		}
	} else {
		if bound, err := DrainBound(nc); err == nil && bound != nil {
			if err := c.boundTermination(ctx, nc, *bound); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
		}
		if err := c.kubeClient.Delete(ctx, nc, client.Preconditions{UID: &nc.UID, ResourceVersion: &nc.ResourceVersion}); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		c.forgetIssuing(nc.UID)
		msg += "; replacing the node"
	}
	c.recorder.Event(nc, corev1.EventTypeWarning, EventRebootFailed, msg)
	observe(result, total)
	log.FromContext(ctx).Info("node reboot failed", "result", result, "reason", msg)
	return reconcile.Result{}, nil
}

// end sets Rebooting False with the reason, dropping the pre-boot ID.
func (c *Controller) end(ctx context.Context, nc *v1.NodeClaim, reason, msg string) error {
	c.forgetIssuing(nc.UID)
	if _, ok := nc.Annotations[v1.RebootPreBootIDAnnotationKey]; ok {
		stored := nc.DeepCopy()
		delete(nc.Annotations, v1.RebootPreBootIDAnnotationKey)
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	stored := nc.DeepCopy()
	conds := c.conditions(nc)
	conds.SetFalse(v1.ConditionTypeRebooting, reason, msg)
	// The node is no longer being disrupted.
	conds.Clear(v1.ConditionTypeDisruptionReason)
	// The optimistic lock keeps a stale reconcile from ending it twice.
	return c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

// boundTermination sets the NodeClaim's termination timestamp to now plus
// bound unless one already set is sooner: the replacement's drain is bounded
// as the reboot's was.
func (c *Controller) boundTermination(ctx context.Context, nc *v1.NodeClaim, bound time.Duration) error {
	deadline := c.clock.Now().Add(bound).UTC().Truncate(time.Second)
	if v, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil && !t.After(deadline) {
			return nil
		}
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
	return c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&v1.RebootingNoScheduleTaint) {
			return nil
		}
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, v1.RebootingNoScheduleTaint)
	return c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

// untaint removes the reboot's taint, reporting whether it was there.
func (c *Controller) untaint(ctx context.Context, node *corev1.Node) (bool, error) {
	stored := node.DeepCopy()
	kept := node.Spec.Taints[:0:0]
	for _, t := range node.Spec.Taints {
		if !t.MatchTaint(&v1.RebootingNoScheduleTaint) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(node.Spec.Taints) {
		return false, nil
	}
	node.Spec.Taints = kept
	if err := c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, err
	}
	return true, nil
}

func (c *Controller) unlabelInitialized(ctx context.Context, node *corev1.Node) error {
	if _, ok := node.Labels[v1.NodeInitializedLabelKey]; !ok {
		return nil
	}
	stored := node.DeepCopy()
	delete(node.Labels, v1.NodeInitializedLabelKey)
	return c.kubeClient.Patch(ctx, node, client.MergeFrom(stored))
}

func (c *Controller) node(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return node, nil
}

func (c *Controller) conditions(nc *v1.NodeClaim) status.ConditionSet {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	return conds
}

func (c *Controller) startIssuing(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.issuing[uid]; !ok {
		c.issuing[uid] = c.clock.Now()
	}
}

func (c *Controller) forgetIssuing(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.issuing, uid)
}

// deadline of the reboot's current phase: ObservationWindow after it was
// issued, IssuanceTimeout after this process started asking the provider;
// none while draining.
func (c *Controller) deadline(nc *v1.NodeClaim) (time.Time, bool) {
	if nc.StatusConditions().Get(v1.ConditionTypeRebooting).Reason == v1.RebootReasonIssued {
		if t, ok := issuedAt(nc); ok {
			return t.Add(ObservationWindow), true
		}
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.issuing[nc.UID]
	return t.Add(IssuanceTimeout), ok
}

func deadlineResult(nc *v1.NodeClaim) (string, string) {
	if nc.StatusConditions().Get(v1.ConditionTypeRebooting).Reason == v1.RebootReasonIssued {
		return ResultRecoveryTimeout, fmt.Sprintf("node did not come back with a new boot ID and Ready within %s of the reboot", ObservationWindow)
	}
	return ResultProviderError, fmt.Sprintf("the cloud provider did not accept the reboot within %s", IssuanceTimeout)
}

// DrainBound reads the reboot's drain bound: nil when absent (drain until
// the pods are gone), 0 for no drain; an error when it is not a non-negative
// duration.
func DrainBound(nc *v1.NodeClaim) (*time.Duration, error) {
	v, ok := nc.Annotations[v1.RebootTerminationGracePeriodAnnotationKey]
	if !ok {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a duration: %w", v1.RebootTerminationGracePeriodAnnotationKey, v, err)
	}
	if d < 0 {
		return nil, fmt.Errorf("%s=%q is negative", v1.RebootTerminationGracePeriodAnnotationKey, v)
	}
	return &d, nil
}

// requestedAt: when the reboot was requested (Rebooting turned True).
func requestedAt(nc *v1.NodeClaim) time.Time {
	return nc.StatusConditions().Get(v1.ConditionTypeRebooting).LastTransitionTime.Time
}

// issuedAt: when the reboot was issued (Initialized turned Unknown).
func issuedAt(nc *v1.NodeClaim) (time.Time, bool) {
	c := nc.StatusConditions().Get(v1.ConditionTypeInitialized)
	if c == nil || c.Status != metav1.ConditionUnknown {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// operationID names one reboot: the NodeClaim, when it was requested, and
// the boot it ends.
func operationID(nc *v1.NodeClaim) string {
	return fmt.Sprintf("%s-%d-%s", nc.UID, requestedAt(nc).UnixNano(), nc.Annotations[v1.RebootPreBootIDAnnotationKey])
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func observe(result string, total time.Duration) {
	RebootsTotal.WithLabelValues(result).Inc()
	RebootDurationSeconds.WithLabelValues(result).Observe(total.Seconds())
}
