package instancetype

import (
	"slices"
	"strconv"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// supportingStrategy keeps the types EC2 launches into a placement group of
// the strategy (DescribeInstanceTypes' placementGroupInfo), as upstream.
// Called with p.mu held.
func (p *Provider) supportingStrategy(types []baseType, strategy string) []baseType {
	supported := map[string]bool{}
	for i := range p.infos {
		info := &p.infos[i]
		if info.PlacementGroupInfo != nil && slices.Contains(info.PlacementGroupInfo.SupportedStrategies, ec2types.PlacementGroupStrategy(strategy)) {
			supported[string(info.InstanceType)] = true
		}
	}
	out := types[:0:0]
	for _, t := range types {
		if supported[t.name] {
			out = append(out, t)
		}
	}
	return out
}

// inGroup adapts a type's offerings to the class's placement group (none:
// as they are): offerings the group ran out of room for are unavailable,
// and a partition group has one offering per partition, each requiring
// karpenter.k8s.aws/placement-group-partition to be its partition, so that
// pods may select or spread over partitions, as upstream does.
func (p *Provider) inGroup(name string, offerings []scheduling.Offering, group *placementgroup.PlacementGroup) []scheduling.Offering {
	if group == nil {
		return offerings
	}
	if group.Strategy != placementgroup.StrategyPartition || group.PartitionCount <= 0 {
		for i := range offerings {
			o := &offerings[i]
			o.Available = o.Available && !p.unavailable.IsUnavailableInGroup(group.ID, "", o.CapacityType, name, o.Zone)
		}
		return offerings
	}
	out := make([]scheduling.Offering, 0, len(offerings)*int(group.PartitionCount))
	for _, o := range offerings {
		for k := 1; k <= int(group.PartitionCount); k++ {
			partition := strconv.Itoa(k)
			cp := o
			cp.Requirements = o.Requirements.With(scheduling.NewRequirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, partition))
			cp.Available = o.Available && !p.unavailable.IsUnavailableInGroup(group.ID, partition, o.CapacityType, name, o.Zone)
			out = append(out, cp)
		}
	}
	return out
}
