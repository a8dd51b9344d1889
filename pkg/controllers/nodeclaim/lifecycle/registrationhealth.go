package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// setNodeRegistrationHealthy records on the NodePool whether its latest
// launch registered: True after a node registers, False after a NodeClaim hit
// the registration timeout. The condition does not gate Ready; it tells users
// (and dashboards) that launches of this NodePool do not come up. It is best
// effort: a failed write is logged and the lifecycle goes on.
func setNodeRegistrationHealthy(ctx context.Context, c client.Client, clk clock.Clock, nodePoolName string, healthy bool, message string) {
	if nodePoolName == "" {
		return
	}
	np := &v1.NodePool{}
	if err := c.Get(ctx, types.NamespacedName{Name: nodePoolName}, np); err != nil {
		return
	}
	stored := np.DeepCopy()
	cs := np.StatusConditions()
	cs.Now = clk.Now
	if healthy {
		cs.SetTrue(v1.ConditionTypeNodeRegistrationHealthy)
	} else {
		cs.SetFalse(v1.ConditionTypeNodeRegistrationHealthy, "RegistrationFailed", message)
	}
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return
	}
	if err := c.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		log.FromContext(ctx).V(1).Info("updating NodeRegistrationHealthy", "NodePool", nodePoolName, "error", err.Error())
	}
}
