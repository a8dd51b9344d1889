package launchtemplate

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Launch is one launch template ready for CreateFleet and the instance types
// that can be launched with it.
type Launch struct {
	Name, ID, ImageID string
	InstanceTypes     []*scheduling.InstanceType
}

// Options are what the launch templates need from outside an EC2NodeClass.
type Options struct {
	ClusterName     string
	ClusterEndpoint string
	ClusterCABundle string
	ClusterCIDR     string
	KubeDNSIP       string
	// TTL of a cached launch template (default DefaultTTL).
	TTL time.Duration
}

// DefaultTTL is how long a launch template stays cached after its last use.
const DefaultTTL = time.Minute

// Provider creates, caches and deletes launch templates.
type Provider struct {
	ec2      *ec2.Client
	resolver *amifamily.Resolver
	clk      clock.Clock
	opts     Options
}

// NewProvider returns a Provider.
func NewProvider(ec2api *ec2.Client, resolver *amifamily.Resolver, clk clock.Clock, opts Options) *Provider {
	return &Provider{ec2: ec2api, resolver: resolver, clk: clk, opts: opts}
}

// EnsureAll returns one launch template per resolved option set, creating
// what is missing (name karpenter.k8s.aws/<hash>).
func (p *Provider) EnsureAll(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, instanceTypes []*scheduling.InstanceType, capacityType string, tags map[string]string) ([]*Launch, error) {
	return nil, errors.New("launchtemplate: not implemented yet")
}

// DeleteAll deletes every launch template of the class.
func (p *Provider) DeleteAll(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	return errors.New("launchtemplate: not implemented yet")
}

// Invalidate forgets a cached launch template (e.g. EC2 said it is gone).
func (p *Provider) Invalidate(ctx context.Context, name, id string) {}
