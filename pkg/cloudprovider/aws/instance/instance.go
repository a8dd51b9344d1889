package instance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/aws/subnet"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Instance is an EC2 instance as Karpenter sees it.
type Instance struct {
	ID, Type, ImageID, Zone, CapacityType, SubnetID, State, PrivateDNSName, CapacityReservationID string
	SecurityGroupIDs                                                                              []string
	LaunchTime                                                                                    time.Time
	Tags                                                                                          map[string]string
}

// ProviderID is aws:///<zone>/<id>.
func (i *Instance) ProviderID() string { return fmt.Sprintf("aws:///%s/%s", i.Zone, i.ID) }

// ParseProviderID returns the instance id of aws:///<zone>/<id>.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", fmt.Errorf("providerID %q is not of the form aws:///<zone>/<instance-id>", providerID)
	}
	i := strings.LastIndex(rest, "/")
	id := rest[i+1:]
	if !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("providerID %q is not of the form aws:///<zone>/<instance-id>", providerID)
	}
	return id, nil
}

// Options configure a Provider.
type Options struct {
	ClusterName string
}

// Provider launches, describes and terminates instances.
type Provider struct {
	ec2         *ec2.Client
	lts         *launchtemplate.Provider
	subnets     *subnet.Provider
	unavailable *instancetype.UnavailableOfferings
	clk         clock.Clock
	opts        Options
}

// NewProvider returns a Provider.
func NewProvider(ec2api *ec2.Client, lts *launchtemplate.Provider, subnets *subnet.Provider, unavailable *instancetype.UnavailableOfferings, clk clock.Clock, opts Options) *Provider {
	return &Provider{ec2: ec2api, lts: lts, subnets: subnets, unavailable: unavailable, clk: clk, opts: opts}
}

var errNotImplemented = errors.New("instance: not implemented yet")

// Create launches one instance for nodeClaim.
func (p *Provider) Create(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, tags map[string]string, instanceTypes []*scheduling.InstanceType) (*Instance, error) {
	return nil, errNotImplemented
}

// Get describes one instance; missing or terminated -> *cloudprovider.NodeClaimNotFoundError.
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) { return nil, errNotImplemented }

// List returns the cluster's Karpenter instances that are not terminated.
func (p *Provider) List(ctx context.Context) ([]*Instance, error) { return nil, errNotImplemented }

// Delete terminates an instance; already gone -> *cloudprovider.NodeClaimNotFoundError.
func (p *Provider) Delete(ctx context.Context, id string) error { return errNotImplemented }

// CreateTags tags an instance.
func (p *Provider) CreateTags(ctx context.Context, id string, tags map[string]string) error {
	return errNotImplemented
}
