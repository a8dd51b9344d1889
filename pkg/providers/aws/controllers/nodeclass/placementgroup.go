package nodeclass

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
)

// PlacementGroupReady reasons, as upstream names them.
const (
	// ReasonPlacementGroupNotFound: placementGroupSelector matched no
	// available placement group (EC2 does not know it, or it is pending,
	// deleting or deleted).
	ReasonPlacementGroupNotFound = "PlacementGroupNotFound"
	// ReasonPlacementGroupResolutionFailed: EC2 could not be asked.
	ReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// PlacementGroupRefreshInterval is how often the group is read again (its
// state may change; the provider's answers live as long).
const PlacementGroupRefreshInterval = placementgroup.DefaultTTL

// resolvePlacementGroup sets PlacementGroupReady: True without a selector
// (as upstream) or when the selector resolves to an available group; False
// naming the field otherwise, and no node of the class is launched (Ready is
// False, and the launch path refuses the class itself).
func (c *Controller) resolvePlacementGroup(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		conds.SetTrue(v1.ConditionTypePlacementGroupReady)
		return 0, nil
	}
	if c.providers.PlacementGroups == nil {
		conds.SetFalse(v1.ConditionTypePlacementGroupReady, ReasonPlacementGroupResolutionFailed, "spec.placementGroupSelector: no placement group provider is configured")
		return 0, nil
	}
	res, err := c.providers.PlacementGroups.Resolve(ctx, sel)
	if err != nil {
		conds.SetFalse(v1.ConditionTypePlacementGroupReady, ReasonPlacementGroupResolutionFailed, "spec.placementGroupSelector: "+err.Error())
		return 0, err
	}
	if problem := res.Problem(sel); problem != "" {
		conds.SetFalse(v1.ConditionTypePlacementGroupReady, ReasonPlacementGroupNotFound, problem)
		return PlacementGroupRefreshInterval, nil
	}
	log.FromContext(ctx).V(1).Info("resolved placement group", "EC2NodeClass", nc.Name, "id", res.Group.ID, "name", res.Group.Name, "strategy", res.Group.Strategy)
	conds.SetTrue(v1.ConditionTypePlacementGroupReady)
	return PlacementGroupRefreshInterval, nil
}
