package expiration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Name of the controller.
const Name = "nodeclaim.expiration"

// MetricReason is the reason label of karpenter_nodeclaims_disrupted_total
// for expired NodeClaims (upstream's value).
const MetricReason = "expired"

// EventReason is the reason of the event recorded when a NodeClaim expires.
const EventReason = "Disrupted"

// Controller deletes expired NodeClaims.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
}

// NewController returns the expiration controller. recorder may be nil.
func NewController(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk, recorder: recorder}
}

// Reconcile deletes the NodeClaim when it is expired, and otherwise asks to
// come back exactly at its expiry.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || nc.Spec.ExpireAfter.IsNever() {
		return reconcile.Result{}, nil
	}
	expireAfter := *nc.Spec.ExpireAfter.Duration
	expiresAt := nc.CreationTimestamp.Add(expireAfter)
	if wait := expiresAt.Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// The UID precondition keeps a NodeClaim recreated under the same name
	// (with a new creation time) from being deleted for its predecessor.
	if err := c.kubeClient.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	msg := fmt.Sprintf("Disrupting NodeClaim %s: expired after %s (expireAfter), created %s",
		nc.Name, nc.Spec.ExpireAfter, nc.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"))
	log.FromContext(ctx).Info("deleting expired nodeclaim", "NodeClaim", nc.Name, "expireAfter", nc.Spec.ExpireAfter.String(),
		"nodepool", nc.Labels[v1.NodePoolLabelKey])
	metrics.CountDisrupted(nc, MetricReason, "", 0)
	if c.recorder != nil {
		c.recorder.Event(nc, corev1.EventTypeNormal, EventReason, msg)
		if node := c.node(ctx, nc); node != nil {
			c.recorder.Event(node, corev1.EventTypeNormal, EventReason, msg)
		}
	}
	return reconcile.Result{}, nil
}

// node returns the NodeClaim's Node when it has registered one, so that
// `kubectl describe node` also shows why the node goes away.
func (c *Controller) node(ctx context.Context, nc *v1.NodeClaim) *corev1.Node {
	if nc.Status.NodeName == "" {
		return nil
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node); err != nil {
		return nil
	}
	return node
}

// Register adds the controller to the manager.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}
