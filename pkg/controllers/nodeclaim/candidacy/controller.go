package candidacy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"
)

// Name of the controller.
const Name = "nodeclaim.disruption"

// Controller keeps Consolidatable and Drifted current on NodeClaims.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock

	Consolidation *Consolidation
	Drift         *Drift

	// applied holds, per NodeClaim name, the two conditions as this
	// controller's last apply stored them (see readOwnWrites), until the
	// NodeClaim is deleted.
	applied sync.Map
}

// NewController returns the NodeClaim disruption conditions controller.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock) *Controller {
	return &Controller{
		kubeClient:    kubeClient,
		cloudProvider: cloudProvider,
		clock:         clk,
		Consolidation: &Consolidation{clock: clk},
		Drift:         &Drift{cloudProvider: cloudProvider, clock: clk},
	}
}

// Reconcile computes both conditions for one NodeClaim and writes its status
// once.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = instrumented.WithController(ctx, Name)
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A deleting NodeClaim is on its way out; its conditions no longer matter.
	if !nc.DeletionTimestamp.IsZero() {
		c.forget(nc.Name)
		return reconcile.Result{}, nil
	}
	poolName := nc.Labels[v1.NodePoolLabelKey]
	if poolName == "" {
		return reconcile.Result{}, nil
	}
	np := &v1.NodePool{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: poolName}, np); err != nil {
		// Without its NodePool there is nothing to compare with; the
		// NodePool watch brings the NodeClaim back if it appears.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.readOwnWrites(nc)
	stored := nc.DeepCopy()
	consolidation := c.Consolidation.Reconcile(np, nc)
	drift, driftErr := c.Drift.Reconcile(ctx, np, nc)
	// Only the two conditions matter: setting one also recomputes Ready in
	// memory, which this controller does not write.
	if !equality.Semantic.DeepEqual(owned(stored), owned(nc)) {
		// Only the two conditions this controller owns, applied as its field
		// manager: the others (lifecycle's Initialized, written meanwhile)
		// stay as stored, and nothing is conditional on the version read.
		if err := ownedconditions.Apply(ctx, c.kubeClient, nc, ownedconditions.DisruptionManager, ownedConditions...); err != nil {
			// The write may or may not have landed: the next read decides.
			c.applied.Delete(nc.Name)
			return reconcile.Result{}, errors.Join(client.IgnoreNotFound(err), driftErr)
		}
		c.applied.Store(nc.Name, appliedConditions{uid: nc.UID, conditions: owned(nc)})
	}
	if driftErr != nil {
		return reconcile.Result{}, driftErr
	}
	return soonest(consolidation, drift), nil
}

// ownedConditions are the NodeClaim conditions this controller writes.
var ownedConditions = []string{v1.ConditionTypeConsolidatable, v1.ConditionTypeDrifted}

// appliedConditions are a NodeClaim's owned conditions as the last apply
// stored them (an absent type is absent from the NodeClaim).
type appliedConditions struct {
	uid        types.UID
	conditions []status.Condition
}

// readOwnWrites brings a NodeClaim read from the informer cache up to this
// controller's own last write. It alone writes Consolidatable and Drifted, so
// what it last applied is their current value; but the cache can deliver a
// copy from before that apply first (the event of lifecycle's or podevents'
// write committed just before it). Computed from that copy the conditions
// would be set again with a new lastTransitionTime and applied once more: on
// the 1,000-pod benchmark, one apply in three of this controller.
func (c *Controller) readOwnWrites(nc *v1.NodeClaim) {
	v, ok := c.applied.Load(nc.Name)
	if !ok || v.(appliedConditions).uid != nc.UID {
		return
	}
	last := v.(appliedConditions)
	nc.Status.Conditions = slices.DeleteFunc(nc.Status.Conditions, func(s status.Condition) bool { return slices.Contains(ownedConditions, s.Type) })
	nc.Status.Conditions = append(nc.Status.Conditions, last.conditions...)
}

// forget drops what the controller remembers of the NodeClaim named name.
func (c *Controller) forget(name string) { c.applied.Delete(name) }

// owned returns nc's conditions of ownedConditions, ordered by type.
func owned(nc *v1.NodeClaim) []status.Condition {
	out := ownedconditions.Of(nc, ownedConditions...)
	slices.SortFunc(out, func(a, b status.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// Register adds the controller to the manager. Besides NodeClaims it watches
// NodePools (a template, requirement or consolidateAfter change affects all
// their NodeClaims at once) and the provider's NodeClasses (the provider's
// drift usually follows a NodeClass change).
func (c *Controller) Register(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		// Only a change of the NodePool's spec (its generation) concerns its NodeClaims:
		// status updates (the counter's resources, on every NodeClaim change) would
		// requeue every NodeClaim of the pool each time, quadratic in the fleet.
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodePoolToNodeClaims), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10})
	for _, nc := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, handler.EnqueueRequestsFromMapFunc(c.nodeClassToNodeClaims))
	}
	return b.Complete(c)
}

func (c *Controller) nodePoolToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: o.GetName()}); err != nil {
		return nil
	}
	return requests(list, func(*v1.NodeClaim) bool { return true })
}

func (c *Controller) nodeClassToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil
	}
	gvk, err := c.kubeClient.GroupVersionKindFor(o)
	if err != nil {
		return nil
	}
	return requests(list, func(nc *v1.NodeClaim) bool {
		ref := nc.Spec.NodeClassRef
		return ref != nil && ref.Name == o.GetName() && ref.Kind == gvk.Kind && ref.Group == gvk.Group
	})
}

func requests(list *v1.NodeClaimList, keep func(*v1.NodeClaim) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// conditions returns nc's condition accessor stamping transitions with clk.
func conditions(nc *v1.NodeClaim, clk clock.PassiveClock) status.ConditionSet {
	cs := nc.StatusConditions()
	cs.Now = clk.Now
	return cs
}

// soonest: the shortest positive RequeueAfter wins.
func soonest(results ...reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}
