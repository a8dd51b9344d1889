// Package nodeoverlay is the NodeOverlay controller (feature gate
// NodeOverlay): it validates every NodeOverlay against the instance types of
// every NodePool, reports the outcome in each overlay's ValidationSucceeded
// condition, and puts the evaluation in the overlay Store that the
// provisioner, the disruption controller and the cost metric read their
// instance types through (pkg/cloudprovider/overlay).
package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
)

// Name is the controller's name.
const Name = "nodeoverlay.controller"

// ResyncPeriod: the overlays are evaluated again this often even when no
// NodeOverlay, NodePool or NodeClass changed, so that instance types the
// provider added since are covered (upstream's period).
const ResyncPeriod = 6 * time.Hour

// key is the one request every event maps to: each pass evaluates all
// overlays against all NodePools, so events collapse into one pending pass.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodeoverlays"}}

// Controller evaluates the NodeOverlays.
type Controller struct {
	kube client.Client
	// cloudProvider must be the provider without the overlay decorator: the
	// overlays are evaluated against the instance types as the provider
	// returns them.
	cloudProvider cloudprovider.CloudProvider
	store         *overlay.Store
	undefinedOK   func(string) bool
	// OnUpdate, when set, is called after each evaluation is stored (the
	// provisioner is triggered: NodePools it skipped as unevaluated may now
	// launch).
	OnUpdate func()
}

// NewController returns the controller. providerLabels are the provider's
// well-known labels (an overlay may require them although an instance type
// does not define them).
func NewController(kube client.Client, cp cloudprovider.CloudProvider, store *overlay.Store, providerLabels ...string) *Controller {
	return &Controller{kube: kube, cloudProvider: cp, store: store, undefinedOK: overlay.WellKnown(providerLabels...)}
}

// Reconcile evaluates every NodeOverlay against every NodePool's instance
// types, writes the overlays' conditions and stores the evaluation. A
// NodePool whose instance types cannot be had is left out (and stays
// unevaluated, so nothing launches from it on guessed prices); the error is
// returned so that the pass is retried.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	overlays := &v1alpha1.NodeOverlayList{}
	if err := c.kube.List(ctx, overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	nodePools := &v1.NodePoolList{}
	if err := c.kube.List(ctx, nodePools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodepools: %w", err)
	}
	var pools []overlay.Pool
	var errs []error
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		its, err := c.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err))
			continue
		}
		pools = append(pools, overlay.Pool{NodePool: np, InstanceTypes: its})
	}
	ev := overlay.Evaluate(overlays.Items, pools, c.undefinedOK)
	if requeue, err := c.writeConditions(ctx, overlays.Items, ev); err != nil || requeue {
		// The evaluation is not stored: a changed overlay is evaluated
		// again first.
		return reconcile.Result{Requeue: requeue}, err
	}
	c.store.Update(ev)
	if c.OnUpdate != nil {
		c.OnUpdate()
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	return reconcile.Result{RequeueAfter: ResyncPeriod}, nil
}

// writeConditions sets ValidationSucceeded on each overlay: False with
// reason RuntimeValidation (naming what is invalid) or Conflict (naming the
// overlays of equal weight it conflicts with), True otherwise. It asks for a
// new pass when an overlay changed or went away meanwhile.
func (c *Controller) writeConditions(ctx context.Context, overlays []v1alpha1.NodeOverlay, ev *overlay.Evaluation) (bool, error) {
	var errs []error
	for i := range overlays {
		o := &overlays[i]
		stored := o.DeepCopy()
		conds := o.StatusConditions()
		if err, ok := ev.Invalid[o.Name]; ok {
			conds.SetFalse(v1alpha1.ConditionTypeValidationSucceeded, overlay.ReasonRuntimeValidation, err.Error())
		} else if with, ok := ev.Conflicts[o.Name]; ok {
			conds.SetFalse(v1alpha1.ConditionTypeValidationSucceeded, overlay.ReasonConflict, overlay.ConflictMessage(with))
		} else {
			conds.SetTrue(v1alpha1.ConditionTypeValidationSucceeded)
		}
		if equality.Semantic.DeepEqual(stored.Status, o.Status) {
			continue
		}
		if err := c.kube.Status().Patch(ctx, o, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return true, nil
			}
			errs = append(errs, fmt.Errorf("writing the status of nodeoverlay %s: %w", o.Name, err))
		}
	}
	return false, errors.Join(errs...)
}

// Register adds the controller to mgr. A pass follows any change of a
// NodeOverlay's or a NodePool's spec, and any change of a NodeClass (its
// status decides the instance types).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{key} })
	b := builder.ControllerManagedBy(mgr).Named(Name).
		Watches(&v1alpha1.NodeOverlay{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	for _, nc := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, one)
	}
	return b.Complete(c)
}
