package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
)

// Condition reasons. The NotFound ones are upstream's.
const (
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonRoleNotFound            = "RoleNotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	// ReasonResolutionFailed: AWS could not be asked (after retries); the
	// condition is Unknown until it can.
	ReasonResolutionFailed = "ResolutionFailed"
)

func (c *Controller) resolveSubnets(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	res, err := c.providers.Subnets.List(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		setUnknownUnlessTrue(nc, conds, v1.ConditionTypeSubnetsReady, ReasonResolutionFailed, err)
		return 0, err
	}
	if len(res.Subnets) == 0 {
		nc.Status.Subnets = nil
		conds.SetFalse(v1.ConditionTypeSubnetsReady, ReasonSubnetsNotFound, res.UnmatchedMessage())
		return c.opts.SubnetRefreshInterval, nil
	}
	subnets := make([]v1.Subnet, 0, len(res.Subnets))
	for _, s := range res.Subnets {
		subnets = append(subnets, v1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
	}
	nc.Status.Subnets = subnets
	// Terms are ORed: one that matches nothing does not make the class
	// unusable, but it is most likely a typo, so the True condition says so.
	conds.SetTrueWithReason(v1.ConditionTypeSubnetsReady, v1.ConditionTypeSubnetsReady, res.UnmatchedMessage())
	return c.opts.SubnetRefreshInterval, nil
}

func (c *Controller) resolveSecurityGroups(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	res, err := c.providers.SecurityGroups.List(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		setUnknownUnlessTrue(nc, conds, v1.ConditionTypeSecurityGroupsReady, ReasonResolutionFailed, err)
		return 0, err
	}
	if len(res.SecurityGroups) == 0 {
		nc.Status.SecurityGroups = nil
		conds.SetFalse(v1.ConditionTypeSecurityGroupsReady, ReasonSecurityGroupsNotFound, res.UnmatchedMessage())
		return time.Minute, nil
	}
	groups := make([]v1.SecurityGroup, 0, len(res.SecurityGroups))
	for _, g := range res.SecurityGroups {
		groups = append(groups, v1.SecurityGroup{ID: g.ID, Name: g.Name})
	}
	nc.Status.SecurityGroups = groups
	conds.SetTrueWithReason(v1.ConditionTypeSecurityGroupsReady, v1.ConditionTypeSecurityGroupsReady, res.UnmatchedMessage())
	return SecurityGroupRefreshInterval, nil
}

func (c *Controller) resolveAMIs(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	res, err := c.providers.AMIs.List(ctx, nc)
	if err != nil {
		var input *amifamily.InputError
		if errors.As(err, &input) {
			nc.Status.AMIs = nil
			conds.SetFalse(v1.ConditionTypeAMIsReady, input.Reason, input.Error())
			return c.opts.AMIRefreshInterval, nil
		}
		setUnknownUnlessTrue(nc, conds, v1.ConditionTypeAMIsReady, ReasonResolutionFailed, err)
		return 0, err
	}
	if len(res.AMIs) == 0 {
		nc.Status.AMIs = nil
		conds.SetFalse(v1.ConditionTypeAMIsReady, ReasonAMINotFound, res.UnmatchedMessage())
		return c.opts.AMIRefreshInterval, nil
	}
	amis := make([]v1.AMI, 0, len(res.AMIs))
	for _, a := range res.AMIs {
		amis = append(amis, v1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements, Deprecated: a.Deprecated})
	}
	nc.Status.AMIs = amis
	conds.SetTrueWithReason(v1.ConditionTypeAMIsReady, v1.ConditionTypeAMIsReady, res.UnmatchedMessage())
	return c.opts.AMIRefreshInterval, nil
}

func (c *Controller) resolveInstanceProfile(ctx context.Context, nc *v1.EC2NodeClass) (time.Duration, error) {
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	if nc.Spec.Role != "" {
		name, err := c.providers.InstanceProfiles.Ensure(ctx, nc)
		if err != nil {
			var missing *instanceprofile.RoleNotFoundError
			if errors.As(err, &missing) {
				conds.SetFalse(v1.ConditionTypeInstanceProfileReady, ReasonRoleNotFound, err.Error())
				// A role created later is picked up on the next refresh.
				return time.Minute, nil
			}
			setUnknownUnlessTrue(nc, conds, v1.ConditionTypeInstanceProfileReady, ReasonResolutionFailed, err)
			return 0, err
		}
		nc.Status.InstanceProfile = name
		conds.SetTrue(v1.ConditionTypeInstanceProfileReady)
		return c.collectInstanceProfiles(ctx, nc, name)
	}
	name := ""
	if nc.Spec.InstanceProfile != nil {
		name = *nc.Spec.InstanceProfile
	}
	if _, err := c.providers.InstanceProfiles.Get(ctx, name); err != nil {
		var missing *instanceprofile.NotFoundError
		if errors.As(err, &missing) {
			nc.Status.InstanceProfile = ""
			conds.SetFalse(v1.ConditionTypeInstanceProfileReady, ReasonInstanceProfileNotFound, err.Error())
			return time.Minute, nil
		}
		setUnknownUnlessTrue(nc, conds, v1.ConditionTypeInstanceProfileReady, ReasonResolutionFailed, err)
		return 0, err
	}
	nc.Status.InstanceProfile = name
	conds.SetTrue(v1.ConditionTypeInstanceProfileReady)
	// Profiles Karpenter made while the class used spec.role go once no
	// node uses them.
	return c.collectInstanceProfiles(ctx, nc, "")
}

// collectInstanceProfiles deletes the class's managed instance profiles
// other than current that no NodeClaim records (a role change or a switch
// to spec.instanceProfile leaves the old one to the nodes that run with
// it). It asks to be called again while some wait out the grace period.
func (c *Controller) collectInstanceProfiles(ctx context.Context, nc *v1.EC2NodeClass, current string) (time.Duration, error) {
	claims := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims); err != nil {
		return 0, fmt.Errorf("listing NodeClaims for instance profile garbage collection: %w", err)
	}
	inUse := map[string]bool{}
	for i := range claims.Items {
		if name := claims.Items[i].Annotations[v1.AnnotationInstanceProfile]; name != "" {
			inUse[name] = true
		}
	}
	deleted, waiting, err := c.providers.InstanceProfiles.GarbageCollect(ctx, nc, current, inUse)
	for _, name := range deleted {
		log.FromContext(ctx).Info("deleted instance profile no node uses", "EC2NodeClass", nc.Name, "instance-profile", name)
	}
	if err != nil {
		return 0, fmt.Errorf("garbage-collecting instance profiles of EC2NodeClass %s: %w", nc.Name, err)
	}
	if waiting {
		return instanceprofile.UnusedGracePeriod, nil
	}
	return 0, nil
}
