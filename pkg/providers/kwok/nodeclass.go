package kwok

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// NodeClassController keeps the Ready condition of KWOKNodeClasses. A
// simulated NodeClass depends on nothing outside the cluster, so it is Ready as
// soon as it exists and is not being deleted; NodePools referencing it mirror
// that in their NodeClassReady condition.
type NodeClassController struct {
	kubeClient client.Client
	clock      clock.Clock
}

// NewNodeClassController returns the KWOKNodeClass readiness controller.
func NewNodeClassController(kubeClient client.Client, clk clock.Clock) *NodeClassController {
	return &NodeClassController{kubeClient: kubeClient, clock: clk}
}

// Name of the controller, for logs and metrics.
func (c *NodeClassController) Name() string { return "kwoknodeclass.readiness" }

// Reconcile sets Ready on one KWOKNodeClass.
func (c *NodeClassController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nodeClass); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := nodeClass.DeepCopy()
	conds := nodeClass.StatusConditions()
	conds.Now = c.clock.Now
	var changed bool
	if nodeClass.DeletionTimestamp.IsZero() {
		changed = conds.SetTrue(status.ConditionReady)
	} else {
		changed = conds.SetFalse(status.ConditionReady, "Deleting", "the KWOKNodeClass is being deleted")
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// Register adds the controller to the manager.
func (c *NodeClassController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&kwokv1alpha1.KWOKNodeClass{}).Complete(c)
}
