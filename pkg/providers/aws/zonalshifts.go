package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/zonalshift"
)

// NewZonalShifts builds the zonal shift provider of ENABLE_ZONAL_SHIFT, as
// upstream's start-up does: ARC knows the cluster by its ARN, read through
// EKS DescribeCluster, and the cluster must be registered for zonal shift,
// which one GetManagedResource proves (it also loads the shifts in progress).
// Either failing is an error naming the cause: upstream refuses to start
// then too, since a setting that silently does nothing would launch into
// impaired zones.
func NewZonalShifts(ctx context.Context, cfg aws.Config, clusterName string, clk clock.Clock) (*zonalshift.Provider, error) {
	out, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(clusterName)})
	if err != nil {
		return nil, fmt.Errorf("enable-zonal-shift (ENABLE_ZONAL_SHIFT): reading the ARN of cluster %q through EKS DescribeCluster: %w", clusterName, err)
	}
	if out.Cluster == nil || aws.ToString(out.Cluster.Arn) == "" {
		return nil, fmt.Errorf("enable-zonal-shift (ENABLE_ZONAL_SHIFT): EKS DescribeCluster of %q returned no cluster ARN", clusterName)
	}
	p := zonalshift.NewProvider(arczonalshift.NewFromConfig(cfg), clk, aws.ToString(out.Cluster.Arn))
	if err := p.Update(ctx); err != nil {
		return nil, fmt.Errorf("enable-zonal-shift (ENABLE_ZONAL_SHIFT): cluster %s is not registered for zonal shift, or arc-zonal-shift:GetManagedResource is not allowed on it: %w", p.ResourceID(), err)
	}
	return p, nil
}
