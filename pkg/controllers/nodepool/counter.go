package nodepool

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// ResourceNodes is the key under which status.resources (and limits) count nodes.
const ResourceNodes corev1.ResourceName = "nodes"

// Counter keeps status.resources of NodePools.
type Counter struct {
	kubeClient client.Client
	clock      clock.Clock
}

// NewCounter returns the counter controller.
func NewCounter(kubeClient client.Client, clk clock.Clock) *Counter {
	return &Counter{kubeClient: kubeClient, clock: clk}
}

// Reconcile recomputes one NodePool's resources from its NodeClaims. Every
// NodeClaim counts, including ones being deleted (their nodes still run) and
// ones not launched yet (they count as a node, with no capacity known yet).
func (c *Counter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	claims := &v1.NodeClaimList{}
	// Read only, so the cache's own objects: a copy of every NodeClaim on each reconcile
	// (one per NodeClaim change) is quadratic in the fleet.
	if err := c.kubeClient.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	stored := np.DeepCopy()
	np.Status.Resources = Usage(claims.Items)
	// status.nodes is also the scale subresource's status replicas.
	np.Status.Nodes = ptr.To(int64(len(claims.Items)))
	return patchStatus(ctx, c.kubeClient, stored, np)
}

// Usage sums the capacity of the NodeClaims and counts them under "nodes".
func Usage(claims []v1.NodeClaim) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range claims {
		for name, q := range claims[i].Status.Capacity {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	// Quantities built by Add keep the format of the first operand; the
	// standard resources are kept at least at zero so that the printer
	// columns show a value for an empty NodePool.
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
		if _, ok := total[name]; !ok {
			total[name] = resource.MustParse("0")
		}
	}
	total[ResourceNodes] = *resource.NewQuantity(int64(len(claims)), resource.DecimalSI)
	return total
}

func equalStatus(a, b *v1.NodePool) bool { return equality.Semantic.DeepEqual(a.Status, b.Status) }

// CountDelay is how long a NodeClaim change waits before its NodePool is counted again:
// the changes within it are counted once. Each count reads all the NodePool's NodeClaims,
// so counting on every change was quadratic in a fleet being provisioned or consolidated
// (thousands of NodeClaim updates a minute); status.resources now lags by up to a second.
const CountDelay = time.Second

// Register adds the controller to the manager. NodePool events count at once, but only a
// new spec (its own status patches would count again); NodeClaim events after CountDelay.
func (c *Counter) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("nodepool.counter").
		For(&v1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodeClaim{}, coalesced(CountDelay)).
		Complete(c)
}

// coalesced enqueues the NodeClaim's NodePool delay after the event; the work queue keeps
// one entry per key, at the earliest time asked, so a burst of events is one reconcile.
func coalesced(delay time.Duration) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range nodePoolRequest(context.Background(), o) {
			q.AddAfter(r, delay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}
