package aws

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/securitygroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
)

// SecurityGroupTTL is upstream's default lifetime of security group answers
// (SECURITY_GROUP_REFRESH_INTERVAL), used when the setting is unset. Subnet,
// image and security group answers live for their refresh intervals, as
// upstream's caches do, which is what bounds the DescribeSubnets,
// DescribeImages and DescribeSecurityGroups call rates and how soon a
// changed tag shows in an EC2NodeClass's status.
const SecurityGroupTTL = time.Minute

// NewProviders builds the SDK clients and the cache-backed resolvers the
// EC2NodeClass controller and launches share, from one SDK configuration
// (one EC2 client, so one retry quota, for the whole provider). disc (the API
// server's discovery client) tells the Kubernetes version when the cluster
// is not an EKS cluster; it may be nil.
func NewProviders(cfg aws.Config, opts *settings.Options, disc discovery.ServerVersionInterface, clk clock.Clock) nodeclass.Providers {
	ec2api := ec2.NewFromConfig(cfg)
	versions := amifamily.NewVersionProvider(eks.NewFromConfig(cfg), opts.ClusterName, disc, clk)
	sgTTL := opts.SecurityGroupRefreshInterval
	if sgTTL <= 0 {
		sgTTL = SecurityGroupTTL
	}
	return nodeclass.Providers{
		Subnets:          subnet.NewProvider(ec2api, clk, opts.SubnetRefreshInterval),
		SecurityGroups:   securitygroup.NewProvider(ec2api, clk, sgTTL),
		AMIs:             amifamily.NewProvider(ec2api, amifamily.NewSSMProvider(ssm.NewFromConfig(cfg), clk, opts.AMIRefreshInterval), versions, clk, opts.AMIRefreshInterval),
		InstanceProfiles: instanceprofile.NewProvider(iam.NewFromConfig(cfg), cfg.Region, opts.ClusterName, clk),
		// Answers live one refresh interval, so classes with the same terms
		// share one call.
		CapacityReservations: capacityreservation.NewProvider(ec2api, clk, nodeclass.CapacityReservationRefreshInterval),
		PlacementGroups:      placementgroup.NewProvider(ec2api, clk, placementgroup.DefaultTTL),
		EC2:                  ec2api,
	}
}
