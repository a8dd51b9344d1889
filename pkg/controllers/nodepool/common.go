package nodepool

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

func conditions(np *v1.NodePool, clk clock.PassiveClock) status.ConditionSet {
	cs := np.StatusConditions()
	cs.Now = clk.Now
	return cs
}

// patchStatus writes the NodePool's status if it changed from stored, with
// optimistic locking because several controllers write conditions.
func patchStatus(ctx context.Context, c client.Client, stored, np *v1.NodePool) (reconcile.Result, error) {
	if equalStatus(stored, np) {
		return reconcile.Result{}, nil
	}
	if err := c.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// nodePoolRequest maps an object carrying the nodepool label to its NodePool.
func nodePoolRequest(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[v1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
