package nodeclass

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/capacityreservation"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/securitygroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/subnet"
)

// DefaultTTL is upstream's lifetime of security group answers. Subnet and
// image answers live for the subnet and AMI refresh intervals, which is what
// bounds the DescribeSubnets and DescribeImages call rates.
const DefaultTTL = time.Minute

// NewProviders builds the SDK clients and resolvers from one SDK
// configuration. disc (the API server's discovery client) tells the
// Kubernetes version when the cluster is not an EKS cluster; it may be nil.
func NewProviders(cfg aws.Config, opts *settings.Options, disc discovery.ServerVersionInterface, clk clock.Clock) Providers {
	ec2api := ec2.NewFromConfig(cfg)
	versions := amifamily.NewVersionProvider(eks.NewFromConfig(cfg), opts.ClusterName, disc, clk)
	return Providers{
		Subnets:          subnet.NewProvider(ec2api, clk, opts.SubnetRefreshInterval),
		SecurityGroups:   securitygroup.NewProvider(ec2api, clk, DefaultTTL),
		AMIs:             amifamily.NewProvider(ec2api, amifamily.NewSSMProvider(ssm.NewFromConfig(cfg), clk, opts.AMIRefreshInterval), versions, clk, opts.AMIRefreshInterval),
		InstanceProfiles: instanceprofile.NewProvider(iam.NewFromConfig(cfg), cfg.Region, opts.ClusterName, clk),
		// Answers live one refresh interval, so classes with the same terms
		// share one call.
		CapacityReservations: capacityreservation.NewProvider(ec2api, clk, CapacityReservationRefreshInterval),
		EC2:                  ec2api,
	}
}

// New is NewController over NewProviders.
func New(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder, opts *settings.Options, cfg aws.Config, disc discovery.ServerVersionInterface) *Controller {
	return NewController(kubeClient, clk, recorder, opts, NewProviders(cfg, opts, disc, clk))
}
