package instance

import (
	"context"
	"fmt"
	"strconv"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Launch failure reasons of a class whose placementGroupSelector cannot be
// launched into (the PlacementGroupReady condition's reasons).
const (
	ReasonPlacementGroupNotFound         = "PlacementGroupNotFound"
	ReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// placement resolves the class's placement group for a launch: nil without
// a selector. A selector that resolves to no available group fails the
// launch naming the field: nothing is launched outside the group. In a
// partition group, the partition is the lowest one the requirements allow
// when they do not allow them all (EC2 takes one partition number per
// launch); otherwise EC2 chooses.
func (p *Provider) placement(ctx context.Context, nc *awsv1.EC2NodeClass, reqs scheduling.Requirements) (*placementgroup.PlacementGroup, launchtemplate.Placement, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, launchtemplate.Placement{}, nil
	}
	if p.pgs == nil {
		err := fmt.Errorf("EC2NodeClass %q: spec.placementGroupSelector is set but no placement group provider is configured", nc.Name)
		return nil, launchtemplate.Placement{}, cloudprovider.NewCreateError(err, ReasonPlacementGroupResolutionFailed, err.Error())
	}
	res, err := p.pgs.Resolve(ctx, sel)
	if err != nil {
		return nil, launchtemplate.Placement{}, cloudprovider.NewCreateError(err, ReasonPlacementGroupResolutionFailed,
			fmt.Sprintf("EC2NodeClass %q: spec.placementGroupSelector: %v", nc.Name, err))
	}
	if problem := res.Problem(sel); problem != "" {
		err := fmt.Errorf("EC2NodeClass %q: %s; nothing is launched", nc.Name, problem)
		return nil, launchtemplate.Placement{}, cloudprovider.NewCreateError(err, ReasonPlacementGroupNotFound, err.Error())
	}
	g := res.Group
	out := launchtemplate.Placement{GroupID: g.ID}
	if g.Strategy == placementgroup.StrategyPartition {
		out.Partition = Partition(reqs, g.PartitionCount)
	}
	return g, out, nil
}

// Partition is the partition (1..count) a launch asks for: the lowest the
// requirements allow when they exclude some; 0 (EC2 chooses) when they allow
// every one, say nothing of partitions, or allow none of 1..count.
func Partition(reqs scheduling.Requirements, count int32) int32 {
	r, ok := reqs.Get(awsv1.LabelPlacementGroupPartition)
	if !ok {
		return 0
	}
	var first, allowed int32
	for k := int32(1); k <= count; k++ {
		if r.Has(strconv.Itoa(int(k))) {
			allowed++
			if first == 0 {
				first = k
			}
		}
	}
	if allowed == count {
		return 0
	}
	return first
}
