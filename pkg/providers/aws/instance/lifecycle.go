package instance

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/pages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Get describes one instance (batched with concurrent Gets). A missing or
// terminated instance is a *cloudprovider.NodeClaimNotFoundError.
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	out, err := p.batch.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if c := awserr.Code(err); c == "InvalidInstanceID.NotFound" || c == "InvalidInstanceID.Malformed" {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
		}
		return nil, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for i := range r.Instances {
			if aws.ToString(r.Instances[i].InstanceId) != id {
				continue
			}
			inst := fromEC2(&r.Instances[i])
			if inst.State == string(ec2types.InstanceStateNameTerminated) {
				return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is terminated", id))
			}
			return inst, nil
		}
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
}

// liveStates are every state but terminated.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// List returns the cluster's Karpenter instances that are not terminated:
// tagged with a NodePool and kubernetes.io/cluster/<cluster>.
func (p *Provider) List(ctx context.Context) ([]*Instance, error) {
	out, err := pages.Collect(ctx, ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag-key"), Values: []string{awsv1.TagNodePool}},
			{Name: aws.String("tag-key"), Values: []string{awsv1.TagClusterPrefix + p.opts.ClusterName}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
		MaxResults: aws.Int32(500),
	}), func(acc []*Instance, page *ec2.DescribeInstancesOutput) []*Instance {
		for _, r := range page.Reservations {
			for i := range r.Instances {
				acc = append(acc, fromEC2(&r.Instances[i]))
			}
		}
		return acc
	})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's instances: %w", err)
	}
	return out, nil
}

// Delete terminates an instance (batched with concurrent Deletes). It
// returns nil while the instance shuts down and a
// *cloudprovider.NodeClaimNotFoundError once it is gone.
func (p *Provider) Delete(ctx context.Context, id string) error {
	inst, err := p.Get(ctx, id)
	if err != nil {
		return err
	}
	if inst.State == string(ec2types.InstanceStateNameShuttingDown) {
		return nil
	}
	if p.shifted(ctx, inst) {
		// Retried by the caller until the shift ends (not counted as a
		// termination failure: it is deliberate, as upstream's).
		return fmt.Errorf("instance %s is in zonally shifted availability zone %s (%s), skipping termination", id, inst.Zone, inst.ZoneID)
	}
	if _, err := p.batch.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		terminationFailures.WithLabelValues(inst.Zone, inst.ZoneID).Inc()
		if c := awserr.Code(err); c == "InvalidInstanceID.NotFound" {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
		}
		return fmt.Errorf("terminating instance %s: %w", id, err)
	}
	if inst.CapacityReservationID != "" && p.opts.Reservations != nil {
		p.opts.Reservations.MarkTerminated(inst.CapacityReservationID, id)
	}
	return nil
}

// Reboot asks EC2 to restart an instance in place (ec2:RebootInstances).
// EC2 takes no idempotency token, so operationID is only logged; the reboot
// controller makes sure one reboot is asked for once. An instance that is gone
// is a *cloudprovider.NodeClaimNotFoundError, a missing permission a
// *cloudprovider.NodeRebootFailedError (retrying would not help).
func (p *Provider) Reboot(ctx context.Context, id, operationID string) error {
	if _, err := p.Get(ctx, id); err != nil {
		return err
	}
	if _, err := p.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}}); err != nil {
		switch {
		case awserr.Code(err) == "InvalidInstanceID.NotFound":
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("rebooting instance %s: %w", id, err))
		case awserr.IsUnauthorized(err):
			return cloudprovider.NewNodeRebootFailedError(fmt.Errorf("rebooting instance %s (operation %s): %w", id, operationID, err))
		}
		return fmt.Errorf("rebooting instance %s (operation %s): %w", id, operationID, err)
	}
	return nil
}

// CreateTags tags an instance.
func (p *Provider) CreateTags(ctx context.Context, id string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: launchtemplate.EC2Tags(tags)})
	if err != nil {
		if awserr.Code(err) == "InvalidInstanceID.NotFound" {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("tagging instance %s: %w", id, err))
		}
		return fmt.Errorf("tagging instance %s: %w", id, err)
	}
	return nil
}

func fromEC2(in *ec2types.Instance) *Instance {
	out := &Instance{
		ID:                    aws.ToString(in.InstanceId),
		Type:                  string(in.InstanceType),
		ImageID:               aws.ToString(in.ImageId),
		SubnetID:              aws.ToString(in.SubnetId),
		PrivateDNSName:        aws.ToString(in.PrivateDnsName),
		CapacityReservationID: aws.ToString(in.CapacityReservationId),
		LaunchTime:            aws.ToTime(in.LaunchTime),
		Tags:                  map[string]string{},
		CapacityType:          scheduling.CapacityTypeOnDemand,
	}
	if in.Placement != nil {
		out.Zone = aws.ToString(in.Placement.AvailabilityZone)
		out.ZoneID = aws.ToString(in.Placement.AvailabilityZoneId)
		out.Tenancy = string(in.Placement.Tenancy)
		out.PlacementGroupID = aws.ToString(in.Placement.GroupId)
		out.PlacementGroupName = aws.ToString(in.Placement.GroupName)
		out.PartitionNumber = aws.ToInt32(in.Placement.PartitionNumber)
	}
	if out.Tenancy == "" {
		out.Tenancy = awsv1.InstanceTenancyDefault
	}
	if in.State != nil {
		out.State = string(in.State.Name)
	}
	switch {
	case in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		out.CapacityType = scheduling.CapacityTypeSpot
	case out.CapacityReservationID != "":
		out.CapacityType = scheduling.CapacityTypeReserved
	}
	for _, ni := range in.NetworkInterfaces {
		if t := aws.ToString(ni.InterfaceType); t == string(ec2types.NetworkInterfaceTypeEfa) || t == string(ec2types.NetworkInterfaceTypeEfaOnly) {
			out.EFACount++
		}
	}
	for _, g := range in.SecurityGroups {
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	for _, t := range in.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}
