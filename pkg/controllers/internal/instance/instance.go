// Package instance holds the last step of termination, shared by the Node and
// the NodeClaim finalizers: make sure the cloud instance is gone. Both
// finalizers call it, so that whichever object goes last leaves no instance
// behind; a finalizer is removed only after EnsureTerminated reported true.
package instance

import (
	"context"
	"fmt"
	"time"

	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// Poll is how often a caller should check again on an instance whose
// deletion the cloud provider accepted but has not finished.
const Poll = 5 * time.Second

// EnsureTerminated asks the cloud provider to delete the NodeClaim's instance
// and reports whether it is gone (the provider answered NodeClaimNotFound).
//
// The NodeClaim's InstanceTerminating condition is set True before the first
// request, so that it records when termination of the instance began (the
// start of karpenter_nodeclaims_instance_termination_duration_seconds) even
// if the process dies right after the request. persist says whether the
// NodeClaim is a stored object whose status may be written; pass false for a
// stand-in built from a Node's provider ID.
func EnsureTerminated(ctx context.Context, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.PassiveClock, nc *v1.NodeClaim, persist bool) (bool, error) {
	if persist {
		stored := nc.DeepCopy()
		cs := nc.StatusConditions()
		cs.Now = clk.Now
		if !cs.Get(v1.ConditionTypeInstanceTerminating).IsTrue() {
			cs.SetTrue(v1.ConditionTypeInstanceTerminating)
		}
		if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
			if err := kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}), client.FieldOwner(ownedconditions.TerminationManager)); err != nil {
				return false, err
			}
		}
	}
	err := cloudProvider.Delete(ctx, nc)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("deleting instance %s of nodeclaim %s: %w", nc.Status.ProviderID, nc.Name, err)
	}
	return false, nil
}
