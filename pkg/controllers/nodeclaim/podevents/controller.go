package podevents

import (
	"context"
	"sync"
	"time"

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
}

type stamp struct {
	uid types.UID
	at  time.Time
}

// NewController returns the pod events controller.
func NewController(kubeClient client.Client, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk, written: map[string]stamp{}}
}

// Reconcile stamps the NodeClaim of the Node named req.Name.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc, err := c.nodeClaimForNode(ctx, req.Name)
	if err != nil || nc == nil {
		return reconcile.Result{}, err
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	if last := c.lastWrite(req.Name, nc); !last.IsZero() {
		if wait := last.Add(DedupeWindow).Sub(now); wait > 0 {
			if !eventTimeMatters(ctx, c.kubeClient, nc) {
				// Upstream's dedupe: the event is dropped.
				return reconcile.Result{}, nil
			}
			// Written recently: come back when the window closes, so this
			// event is recorded then instead of being lost.
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	stored := nc.DeepCopy()
	nc.Status.LastPodEventTime = metav1.NewTime(ceilSecond(now))
	// A merge patch of this one field: other controllers writing conditions
	// at the same time are not overwritten, so no optimistic lock is needed.
	if err := c.kubeClient.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.remember(req.Name, nc.UID, nc.Status.LastPodEventTime.Time)
	return reconcile.Result{}, nil
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

// eventTimeMatters reports whether recording an event inside the dedupe window
// (at the window's end) can change a decision. The time's only reader is
// consolidation, which waits consolidateAfter from it: with Never nothing
// waits, and with 0s a node is consolidatable at any time after its last
// event, whichever event that was. Only a positive consolidateAfter could
// start too early from the window's first event, so only then is the later
// event written; otherwise it is dropped, as upstream drops it.
func eventTimeMatters(ctx context.Context, kube client.Client, nc *v1.NodeClaim) bool {
	np := &v1.NodePool{}
	if err := kube.Get(ctx, types.NamespacedName{Name: nc.Labels[v1.NodePoolLabelKey]}, np); err != nil {
		return false
	}
	after := np.Spec.Disruption.ConsolidateAfter
	return !after.IsNever() && *after.Duration > 0
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
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingFields{lifecycle.NodeClaimProviderIDIndex: node.Spec.ProviderID}); err != nil {
		// Without the index (a direct API client), filter a full list.
		if err := c.kubeClient.List(ctx, list); err != nil {
			return nil, err
		}
	}
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
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
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}
