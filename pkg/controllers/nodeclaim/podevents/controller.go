package podevents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
)

// Name of the controller.
const Name = "nodeclaim.podevents"

// DedupeWindow is the least time between two writes of one NodeClaim's
// lastPodEventTime (upstream's value).
const DedupeWindow = 10 * time.Second

// freshCreate bounds how old a pod seen in a create event may be for the event
// to count as a binding. The informer replays every existing pod as a create
// event when Karpenter starts; without the bound a restart would reset every
// node's consolidateAfter. Pods created already bound (spec.nodeName set by
// their author) are seen within a moment of their creation.
const freshCreate = time.Minute

// Controller writes lastPodEventTime. Its requests are Node names: every pod
// event on a node is the same work (stamp the node's NodeClaim), so events
// collapse in the queue.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock

	// written holds, per Node name, the NodeClaim (UID) last stamped through
	// it and the time written, for DedupeWindow (see lastWrite).
	mu        sync.Mutex
	written   map[string]stamp
	lastSweep time.Time
	// held holds, per Node name, the last pod event not written because
	// its NodePool's consolidateAfter made the time irrelevant (Never or
	// 0s), with the NodePool's name: when the NodePool's consolidateAfter
	// becomes positive, these are written (see nodePoolHandler).
	held map[string]stamp
	// seen holds, per Node name, the time of the last pod event the
	// handlers mapped to the node and not yet reconciled: the time
	// recorded is the event's, not the (later) reconcile's.
	seen map[string]time.Time
}

type stamp struct {
	uid  types.UID
	at   time.Time
	pool string
}

// NewController returns the pod events controller.
func NewController(kubeClient client.Client, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk, written: map[string]stamp{}, held: map[string]stamp{}, seen: map[string]time.Time{}}
}

// Reconcile stamps the NodeClaim of the Node named req.Name.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc, err := c.nodeClaimForNode(ctx, req.Name)
	if err != nil || nc == nil || !nc.DeletionTimestamp.IsZero() {
		if err == nil {
			c.forget(req.Name)
		}
		return reconcile.Result{}, err
	}
	now := c.clock.Now()
	// The event's time: the latest the handlers saw, else held back
	// earlier, else (a request with neither) now.
	at := c.eventTime(req.Name, nc.UID, now)
	c.hold(req.Name, stamp{uid: nc.UID, at: at, pool: nc.Labels[v1.NodePoolLabelKey]})
	if !eventTimeMatters(ctx, c.kubeClient, nc) {
		// Its only reader waits no time from it (consolidateAfter Never
		// or 0s): held in memory, written if the NodePool's
		// consolidateAfter becomes positive (nodePoolHandler).
		return reconcile.Result{}, nil
	}
	if !ceilSecond(at).After(nc.Status.LastPodEventTime.Time) {
		c.covered(req.Name, nc.Status.LastPodEventTime.Time)
		return reconcile.Result{}, nil
	}
	if last := c.lastWrite(req.Name, nc); !last.IsZero() {
		if wait := last.Add(DedupeWindow).Sub(now); wait > 0 {
			// Written recently: come back when the window closes, so this
			// event is recorded then instead of being lost.
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	stored := nc.DeepCopy()
	nc.Status.LastPodEventTime = metav1.NewTime(ceilSecond(at))
	// A merge patch of this one field: other controllers writing conditions
	// at the same time are not overwritten, so no optimistic lock is needed.
	if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFrom(stored), client.FieldOwner(ownedconditions.PodEventsManager)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.remember(req.Name, nc.UID, nc.Status.LastPodEventTime.Time)
	c.covered(req.Name, nc.Status.LastPodEventTime.Time)
	return reconcile.Result{}, nil
}

// saw records a pod event on the node, as the handlers map it.
func (c *Controller) saw(nodeName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[nodeName] = c.clock.Now()
}

// eventTime takes the time of the node's last event seen by the handlers
// and not yet reconciled; without one, the time held back for the same
// NodeClaim; without either, now.
func (c *Controller) eventTime(nodeName string, uid types.UID, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.seen[nodeName]; ok {
		delete(c.seen, nodeName)
		return t
	}
	if h, ok := c.held[nodeName]; ok && h.uid == uid {
		return h.at
	}
	return now
}

// hold keeps s as the node's last event not yet written.
func (c *Controller) hold(nodeName string, s stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.held[nodeName]; ok && h.uid == s.uid && h.at.After(s.at) {
		return
	}
	c.held[nodeName] = s
}

// forget drops what is kept for the node: its NodeClaim is gone or deleting.
func (c *Controller) forget(nodeName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, nodeName)
	delete(c.seen, nodeName)
}

// covered drops the held event when the stored time (at) is not earlier.
func (c *Controller) covered(nodeName string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.held[nodeName]; ok && !ceilSecond(h.at).After(at) {
		delete(c.held, nodeName)
	}
}

// lastWrite is the later of nc's lastPodEventTime and this controller's own
// last write of it. The NodeClaim comes from the informer cache, which may not
// have this controller's last patch yet (another controller's write came
// first); deduping on the cached time alone wrote twice within a second.
func (c *Controller) lastWrite(nodeName string, nc *v1.NodeClaim) time.Time {
	last := nc.Status.LastPodEventTime.Time
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.written[nodeName]; ok && s.uid == nc.UID && s.at.After(last) {
		return s.at
	}
	return last
}

// remember records a write. An entry matters only within DedupeWindow of its
// write, so older ones are swept once per window.
func (c *Controller) remember(nodeName string, uid types.UID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[nodeName] = stamp{uid: uid, at: at}
	now := c.clock.Now()
	if now.Sub(c.lastSweep) < DedupeWindow {
		return
	}
	c.lastSweep = now
	for name, s := range c.written {
		if now.Sub(s.at) > DedupeWindow {
			delete(c.written, name)
		}
	}
}

// eventTimeMatters reports whether writing the event's time can change a
// decision. The time's only reader is consolidation, which waits
// consolidateAfter from it: with Never nothing waits, and with 0s a node is
// consolidatable at any time after its last event, whichever event that was.
// Only a positive consolidateAfter waits on it, so only then is it written;
// otherwise it is held (see nodePoolHandler). A NodePool not found (deleted, or
// not yet in the cache) holds it too.
func eventTimeMatters(ctx context.Context, kube client.Client, nc *v1.NodeClaim) bool {
	np := &v1.NodePool{}
	if err := kube.Get(ctx, types.NamespacedName{Name: nc.Labels[v1.NodePoolLabelKey]}, np); err != nil {
		return false
	}
	return positive(np.Spec.Disruption.ConsolidateAfter)
}

func positive(after v1.NillableDuration) bool {
	return !after.IsNever() && after.Duration != nil && *after.Duration > 0
}

// ceilSecond rounds up to a whole second. The API stores times with second
// precision; truncating would date the event up to a second too early, and
// consolidation could then start before consolidateAfter really elapsed.
func ceilSecond(t time.Time) time.Time {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		return tr.Add(time.Second)
	}
	return t
}

// nodeClaimForNode finds the NodeClaim of a Node: through the Node's owner
// reference once registered, else through its provider ID. It returns nil when
// the Node is gone or not Karpenter's.
func (c *Controller) nodeClaimForNode(ctx context.Context, nodeName string) (*v1.NodeClaim, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	for _, ref := range node.OwnerReferences {
		if ref.Kind != "NodeClaim" || ref.APIVersion != v1.SchemeGroupVersion.String() {
			continue
		}
		nc := &v1.NodeClaim{}
		if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return nc, nil
	}
	nc, err := lifecycle.NodeClaimForNode(ctx, c.kubeClient, node)
	var dup *lifecycle.DuplicateNodeClaimsError
	if errors.As(err, &dup) {
		return dup.First, nil
	}
	return nc, err
}

// NodeToStamp returns the node a pod event concerns, or "" when the event is
// not one that changes what runs on a node: a pod bound to a node, a pod
// created already bound, a pod on a node that finished (Succeeded/Failed),
// started terminating, or was deleted. old is nil for create and delete
// events; deleted is true for delete events.
func NodeToStamp(old, cur *corev1.Pod, deleted bool, now time.Time) string {
	if cur == nil || cur.Spec.NodeName == "" {
		return ""
	}
	switch {
	case deleted:
		return cur.Spec.NodeName
	case old == nil:
		if now.Sub(cur.CreationTimestamp.Time) <= freshCreate {
			return cur.Spec.NodeName
		}
		return ""
	case old.Spec.NodeName == "":
		return cur.Spec.NodeName
	case !isTerminal(old) && isTerminal(cur):
		return cur.Spec.NodeName
	case old.DeletionTimestamp.IsZero() && !cur.DeletionTimestamp.IsZero():
		return cur.Spec.NodeName
	}
	return ""
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podHandler turns pod events into requests for their node.
func (c *Controller) podHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], node string) {
		if node != "" {
			c.saw(node)
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, NodeToStamp(nil, p, false, c.clock.Now()))
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok1 && ok2 {
				enqueue(q, NodeToStamp(o, n, false, c.clock.Now()))
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, NodeToStamp(nil, p, true, c.clock.Now()))
			}
		},
	}
}

// nodePoolHandler: when a NodePool's consolidateAfter becomes positive, the
// events held for its nodes while it was Never or 0s are written, so that its
// nodes wait consolidateAfter from their last pod event as if every event had
// been written. (Events held before a restart are lost: those nodes count
// from their stored time, as they would had the events come in the window
// upstream drops.)
func (c *Controller) nodePoolHandler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*v1.NodePool)
			n, ok2 := e.ObjectNew.(*v1.NodePool)
			if !ok1 || !ok2 || positive(o.Spec.Disruption.ConsolidateAfter) || !positive(n.Spec.Disruption.ConsolidateAfter) {
				return
			}
			for _, node := range c.heldFor(n.Name) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
			}
		},
	}
}

// heldFor lists the nodes of the NodePool with an event held.
func (c *Controller) heldFor(pool string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for node, h := range c.held {
		if h.pool == pool {
			out = append(out, node)
		}
	}
	return out
}

// Register adds the controller to the manager. It also asks for the NodeClaim
// provider ID index, which the lifecycle controller registers too (a second
// registration fails harmlessly; lookups work without it, only slower).
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := lifecycle.IndexNodeClaimProviderID(ctx, mgr.GetFieldIndexer()); err != nil {
		mgr.GetLogger().V(1).Info("field index not added", "error", err.Error())
	}
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		Watches(&corev1.Pod{}, c.podHandler()).
		Watches(&v1.NodePool{}, c.nodePoolHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}
