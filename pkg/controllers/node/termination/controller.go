package termination

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/instance"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination/eviction"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Name of the controller.
const Name = "node.termination"

// DrainPoll is how often a draining node is looked at again, besides the pod
// events that bring it back sooner.
const DrainPoll = time.Second

// NodeClaimProviderIDIndex is the field index of NodeClaims by
// status.providerID (the same index the lifecycle controller registers).
const NodeClaimProviderIDIndex = "status.providerID"

// Controller finalizes deleted Nodes that carry karpenter.sh/termination.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	events        *nodeEvents

	// Drainer taints and drains; Queue evicts. Exposed so tests can drive
	// the queue on a fake clock.
	Drainer *Drainer
	Queue   *eviction.Queue

	// writes holds, per NodeClaim, this controller's last write of its
	// conditions (see writeConditions).
	writes *ownWrites
}

// NewController returns the controller with its own eviction queue.
// recorder may be nil.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) *Controller {
	queue := eviction.NewQueue(kubeClient, clk, recorder)
	return &Controller{
		kubeClient:    kubeClient,
		cloudProvider: cloudProvider,
		clock:         clk,
		events:        &nodeEvents{recorder: recorder, clock: clk, last: map[eventKey]time.Time{}},
		Drainer:       &Drainer{kubeClient: kubeClient, clock: clk, recorder: recorder, publisher: events.NewPublisher(recorder, clk), queue: queue},
		Queue:         queue,
		writes:        &ownWrites{last: map[types.UID]write{}},
	}
}

// Reconcile moves a deleted Node one step through termination:
//
//  1. its NodeClaim is deleted too (kubectl delete node);
//  2. a Node that is not Ready and whose instance is already gone is
//     released at once: there is nothing left to drain;
//  3. the node is tainted karpenter.sh/disrupted:NoSchedule and drained
//     (NodeClaim condition Drained);
//  4. volume attachments are waited for, until the termination deadline
//     (VolumesDetached);
//  5. the instance is deleted until the cloud provider reports it gone
//     (InstanceTerminating);
//  6. only then the finalizer is removed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = instrumented.WithController(ctx, Name)
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !hasFinalizer(node) {
		return reconcile.Result{}, nil
	}
	nc, err := c.nodeClaimFor(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nc != nil {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", nc.Name))
		if nc.DeletionTimestamp.IsZero() {
			// The NodeClaim's finalizer records the termination deadline
			// and waits for this Node to go.
			if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
			}
			// Continue from the deleted object: its conditions are written
			// below under an optimistic lock.
			if err := c.kubeClient.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
				if !apierrors.IsNotFound(err) {
					return reconcile.Result{}, err
				}
				nc = nil
			}
		}
	}

	// Like the cloud node lifecycle controller: a Ready node still has a
	// kubelet running its pods, whatever the cloud provider says, so only a
	// node that is not Ready and has no instance skips the drain.
	if !isReady(node) && node.Spec.ProviderID != "" {
		_, err := c.cloudProvider.Get(ctx, node.Spec.ProviderID)
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			log.FromContext(ctx).Info("instance already gone and node not ready, skipping drain")
			return requeueOnConflict(c.release(ctx, node))
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("getting instance %s: %w", node.Spec.ProviderID, err)
		}
	}

	// The NodeClaim's conditions are set in memory as termination goes
	// and written in one request before each wait and before the instance
	// is deleted (writeConditions): a node drained at once costs one
	// status write, not one per condition.
	var stored *v1.NodeClaim
	if nc != nil {
		c.writes.readOwn(nc)
		stored = nc.DeepCopy()
	}
	deadline := c.deadline(ctx, node, nc)
	if err := c.Drainer.Taint(ctx, node); err != nil {
		return requeueOnConflict(fmt.Errorf("tainting node: %w", err))
	}
	drain, err := c.Drainer.Drain(ctx, node, nc, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !drain.Drained() {
		c.events.warn(node, ReasonFailedDraining, "Failed to drain node, "+drain.Message)
		c.setCondition(nc, status.Condition{Type: v1.ConditionTypeDrained, Status: "Unknown", Reason: "Draining", Message: drain.Message})
		if err := c.writeConditions(ctx, stored, nc, drain.Blocked); err != nil {
			return requeueOnConflict(err)
		}
		return reconcile.Result{RequeueAfter: DrainPoll}, nil
	}
	drainedNow := nc != nil && !nc.StatusConditions().Get(v1.ConditionTypeDrained).IsTrue()
	if drainedNow {
		c.setCondition(nc, status.Condition{Type: v1.ConditionTypeDrained, Status: "True", Reason: v1.ConditionTypeDrained})
	}
	wait, err := c.volumesDetached(ctx, node, nc, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !wait && nc != nil && !nc.StatusConditions().Get(v1.ConditionTypeInstanceTerminating).IsTrue() {
		// Written with the others: EnsureTerminated finds it True and
		// deletes the instance without a write of its own.
		nc.StatusConditions().SetTrue(v1.ConditionTypeInstanceTerminating)
	}
	if err := c.writeConditions(ctx, stored, nc, 0); err != nil {
		return requeueOnConflict(err)
	}
	if drainedNow {
		NodesDrainedTotal.WithLabelValues(node.Labels[v1.NodePoolLabelKey]).Inc()
		log.FromContext(ctx).Info("drained node")
	}
	if wait {
		return reconcile.Result{RequeueAfter: DrainPoll}, nil
	}

	target, persist := nc, nc != nil
	if nc == nil {
		// No NodeClaim (its finalizer was removed by hand): still make sure
		// the instance behind the Node does not outlive it.
		target = &v1.NodeClaim{}
		target.Name = node.Name
		target.Status.ProviderID = node.Spec.ProviderID
	}
	terminated, err := instance.EnsureTerminated(ctx, c.kubeClient, c.cloudProvider, c.clock, target, persist)
	if err != nil {
		return requeueOnConflict(client.IgnoreNotFound(err))
	}
	if !terminated {
		return reconcile.Result{RequeueAfter: instance.Poll}, nil
	}
	if nc != nil {
		c.writes.forget(nc.UID)
	}
	return requeueOnConflict(c.release(ctx, node))
}

// deadline is the NodeClaim's termination timestamp annotation (set by its
// finalizer from terminationGracePeriod), or nil.
func (c *Controller) deadline(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) *time.Time {
	if nc == nil {
		return nil
	}
	value, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		// A hand-edited value must not wedge termination: drain without a
		// deadline, and say so.
		log.FromContext(ctx).Error(err, "ignoring unparsable annotation", "annotation", v1.NodeClaimTerminationTimestampAnnotationKey, "value", value)
		return nil
	}
	c.events.warn(node, ReasonTerminationGracePeriodExpiring, fmt.Sprintf("All pods will be deleted by %s", t.UTC().Format(time.RFC3339)))
	return &t
}

// volumesDetached records the VolumesDetached condition and reports whether
// termination must wait for volume attachments.
func (c *Controller) volumesDetached(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim, deadline *time.Time) (bool, error) {
	pending, err := PendingVolumeAttachments(ctx, c.kubeClient, node, c.clock.Now())
	if err != nil {
		return false, err
	}
	switch {
	case len(pending) == 0:
		c.setCondition(nc, status.Condition{Type: v1.ConditionTypeVolumesDetached, Status: "True", Reason: v1.ConditionTypeVolumesDetached})
		return false, nil
	case deadline != nil && !c.clock.Now().Before(*deadline):
		// The deadline bounds the whole termination: stop waiting.
		c.setCondition(nc, status.Condition{Type: v1.ConditionTypeVolumesDetached, Status: "False", Reason: "TerminationGracePeriodElapsed",
			Message: fmt.Sprintf("%d volume attachments remained at the termination deadline", len(pending))})
		return false, nil
	}
	msg := fmt.Sprintf("Awaiting deletion of %d VolumeAttachments bound to node", len(pending))
	c.events.warn(node, ReasonAwaitingVolumeDetachment, msg)
	c.setCondition(nc, status.Condition{Type: v1.ConditionTypeVolumesDetached, Status: "Unknown", Reason: ReasonAwaitingVolumeDetachment, Message: msg})
	return true, nil
}

// release removes the finalizer, letting the Node go, and records the
// termination.
func (c *Controller) release(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, v1.TerminationFinalizer)
	if err := c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	pool := node.Labels[v1.NodePoolLabelKey]
	metrics.NodesTerminatedTotal.WithLabelValues(pool, node.Labels[corev1.LabelTopologyZone]).Inc()
	TerminationDuration.WithLabelValues(pool).Observe(c.clock.Since(stored.DeletionTimestamp.Time).Seconds())
	LifetimeDuration.WithLabelValues(pool).Observe(c.clock.Since(node.CreationTimestamp.Time).Seconds())
	c.events.forget(node)
	log.FromContext(ctx).Info("deleted node")
	return nil
}

// setCondition sets one condition of the NodeClaim in memory.
func (c *Controller) setCondition(nc *v1.NodeClaim, cond status.Condition) {
	if nc == nil {
		return
	}
	cs := nc.StatusConditions()
	cs.Now = c.clock.Now
	cs.Set(cond)
}

// MessageRefresh is the least time between two writes of a NodeClaim that
// change only conditions' messages. A drain's message lists the pods it
// waits for and changes as each is evicted and goes: written every time, a
// node of ten pods cost some twenty status writes (and as many conflicts
// with other writers) on its way out. A change of a condition's status or
// reason is written at once.
const MessageRefresh = 15 * time.Second

// conditionTypes are the NodeClaim conditions termination writes.
var conditionTypes = []string{v1.ConditionTypeDrained, v1.ConditionTypeVolumesDetached, v1.ConditionTypeInstanceTerminating}

// ownRetention bounds how long a NodeClaim's last write is remembered when
// its termination does not finish here (the NodeClaim went another way).
const ownRetention = 10 * time.Minute

// ownWrites remembers, per NodeClaim, termination's last write: its
// conditions as stored, when, and how many pods were blocked then.
type ownWrites struct {
	mu        sync.Mutex
	last      map[types.UID]write
	lastSweep time.Time
}

type write struct {
	at         time.Time
	blocked    int
	conditions []status.Condition
}

// writeConditions writes termination's conditions as they are in nc, if they
// changed since stored, in one server-side apply as termination's field
// manager: no optimistic lock, so a NodeClaim read from a cache seconds behind
// (at thousands of nodes, most reads) costs no 409 and retry, and other
// controllers' conditions are left as they are. It writes nothing when the
// change is to messages alone, this NodeClaim was written within
// MessageRefresh and as many pods were blocked then (blocked, see
// DrainStatus.Blocked): such a message is written at a later poll, or with
// the next change of status. A drain that becomes blocked, or unblocked, says
// so at once. stored becomes nc once written.
func (c *Controller) writeConditions(ctx context.Context, stored, nc *v1.NodeClaim, blocked int) error {
	// Only termination's own conditions count: the status helper also
	// restamps others (Ready's observedGeneration) that this apply leaves
	// to their owners.
	if nc == nil || equality.Semantic.DeepEqual(ownConditions(stored), ownConditions(nc)) {
		return nil
	}
	now := c.clock.Now()
	if messagesOnly(ownConditions(stored), ownConditions(nc)) && c.writes.recent(nc.UID, now, blocked) {
		return nil
	}
	// Only the types nc has: an apply that leaves out a type this manager
	// applied before removes it (readOwn put back what a stale read lacked).
	var types []string
	for _, t := range conditionTypes {
		if nc.StatusConditions().Get(t) != nil {
			types = append(types, t)
		}
	}
	if err := ownedconditions.Apply(ctx, c.kubeClient, nc, ownedconditions.TerminationManager, types...); err != nil {
		return client.IgnoreNotFound(err)
	}
	c.writes.wrote(nc.UID, write{at: now, blocked: blocked, conditions: ownConditions(nc)})
	nc.DeepCopyInto(stored)
	return nil
}

func ownConditions(nc *v1.NodeClaim) []status.Condition {
	return ownedconditions.Of(nc, conditionTypes...)
}

// readOwn brings a NodeClaim read from the informer cache up to
// termination's own last write. Termination alone writes Drained and
// VolumesDetached (and InstanceTerminating, as the NodeClaim finalizer does,
// to the same value), so what it last wrote is their value now; a copy from
// before that write would make the pass rewrite them, or, applied, remove
// the ones it lacks. After a restart nothing is remembered, but the cache is
// then listed after the last write.
func (o *ownWrites) readOwn(nc *v1.NodeClaim) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w, ok := o.last[nc.UID]; ok {
		ownedconditions.Overlay(nc, w.conditions)
	}
}

// recent reports whether the NodeClaim was written within MessageRefresh of
// now with as many pods blocked.
func (o *ownWrites) recent(uid types.UID, now time.Time, blocked int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.last[uid]
	return ok && now.Sub(w.at) < MessageRefresh && w.blocked == blocked
}

func (o *ownWrites) wrote(uid types.UID, w write) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last[uid] = w
	if w.at.Sub(o.lastSweep) < ownRetention {
		return
	}
	o.lastSweep = w.at
	for k, old := range o.last {
		if w.at.Sub(old.at) >= ownRetention {
			delete(o.last, k)
		}
	}
}

// forget drops what is remembered of a NodeClaim whose termination is done.
func (o *ownWrites) forget(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.last, uid)
}

// messagesOnly reports whether after differs from before in conditions'
// messages alone (and the times a message change carries).
func messagesOnly(before, after []status.Condition) bool {
	if len(before) != len(after) {
		return false
	}
	for _, a := range after {
		found := false
		for _, b := range before {
			if b.Type == a.Type {
				found = b.Status == a.Status && b.Reason == a.Reason && b.ObservedGeneration == a.ObservedGeneration
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// nodeClaimFor returns the Node's NodeClaim (by provider ID), or nil.
func (c *Controller) nodeClaimFor(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingFields{NodeClaimProviderIDIndex: node.Spec.ProviderID}); err != nil {
		if err := c.kubeClient.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing nodeclaims: %w", err)
		}
	}
	var found []*v1.NodeClaim
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	// Several claims for one instance is a user's mistake; prefer the one
	// the Node names as its owner.
	for _, ref := range node.OwnerReferences {
		for _, nc := range found {
			if ref.UID == nc.UID {
				return nc, nil
			}
		}
	}
	return found[0], nil
}

// Register adds the controller, its eviction queue and the field indexes it
// reads through to the manager.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := podindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		// Lookups still work, filtering a full list (see podindex.OnNode).
		mgr.GetLogger().Info("pod index not added", "field", podindex.NodeName, "error", err.Error())
	}
	indexes := []struct {
		obj   client.Object
		field string
		value func(client.Object) []string
	}{
		{&v1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string { return nonEmpty(o.(*v1.NodeClaim).Status.ProviderID) }},
	}
	for _, ix := range indexes {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.value); err != nil {
			// Registered already by another controller; lookups work
			// either way (they fall back to filtering a list).
			mgr.GetLogger().V(1).Info("field index not added", "field", ix.field, "error", err.Error())
		}
	}
	if err := mgr.Add(c.Queue); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return !o.GetDeletionTimestamp().IsZero() && hasFinalizer(o)
		}))).
		// A pod leaving a draining node moves its drain on.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToNode), builder.WithPredicates(podLeaving())).
		// The termination deadline arrives as an annotation on the NodeClaim.
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodeClaimToNode), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return !o.GetDeletionTimestamp().IsZero()
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 100}).
		Complete(c)
}

func podToNode(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.(*corev1.Pod).Spec.NodeName; name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return nil
}

func nodeClaimToNode(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.(*v1.NodeClaim).Status.NodeName; name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return nil
}

// podLeaving passes pod events that can finish a drain: deletions, and pods
// that start terminating or finish running.
func podLeaving() predicate.Funcs {
	leaving := func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && p.Spec.NodeName != "" && (IsTerminating(p) || IsTerminal(p))
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return leaving(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func isReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == v1.TerminationFinalizer {
			return true
		}
	}
	return false
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// requeueOnConflict turns an optimistic-lock conflict into a quick, quiet
// retry from fresh objects.
func requeueOnConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}
