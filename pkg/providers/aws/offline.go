package aws

import (
	"context"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/placementgroup"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
)

// ProviderIDPrefix starts the providerID of every EC2 instance's node
// (aws:///<zone>/<instance id>).
const ProviderIDPrefix = "aws://"

// offline is the AWS provider's read-only side for kubectl-karpenter.
type offline struct{}

var _ cloudprovider.Offline = offline{}

func (offline) NodeClassGroup() string { return awsv1.Group }

// InstanceTypes is the AWS provider over the reader's EC2NodeClasses (their
// status: subnets and zones as the cluster's controller resolved them),
// configured from the environment as the controller is (AWS_REGION,
// AWS_ENDPOINT_URL, credentials). It makes only read calls
// (DescribeInstanceTypes, DescribeInstanceTypeOfferings, Pricing GetProducts,
// DescribeSpotPriceHistory, and DescribePlacementGroups for a class with a
// placementGroupSelector: its types are those of the group's strategy and a
// partition group offers one offering per partition), and prices with live prices when the Pricing API
// and EC2 answer, the static reference prices otherwise.
func (offline) InstanceTypes(ctx context.Context, reader client.Client, clk clock.Clock) (cloudprovider.CloudProvider, error) {
	cfg, err := settings.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	httpclient.Configure(&cfg)
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	// A refresh is read-only; when it fails the static prices stay.
	_ = pricing.NewController(prices, clk).Reconcile(ctx)
	// Kubelet expressions are evaluated: a class holding them launches
	// only where the controller's NodeClassCEL gate is on (elsewhere it is
	// not Ready), and there its types are sized by them.
	its := instancetype.NewProvider(ec2Client, prices, instancetype.NewUnavailableOfferings(clk), clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: settings.DefaultVMMemoryOverheadPercent, NodeClassCEL: true})
	its.SetPlacementGroups(placementgroup.NewProvider(ec2Client, clk, placementgroup.DefaultTTL))
	return New(reader, its), nil
}

func (offline) Launched(node *corev1.Node) bool {
	return strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix)
}

// referencePrices are the static reference prices (us-east-1 Linux
// on-demand), the table the controller and the AWS emulator start from.
var referencePrices = sync.OnceValue(func() *pricing.Provider {
	return pricing.NewProvider(nil, nil, "us-east-1", true, clock.RealClock{})
})

// NodePrice is the reference price of the node's instance type; spot is
// priced at on-demand, an upper bound, until live prices are known.
func (offline) NodePrice(node *corev1.Node) (float64, bool) {
	l := node.Labels
	it := l[corev1.LabelInstanceTypeStable]
	if it == "" {
		return 0, false
	}
	if l[v1.CapacityTypeLabelKey] == v1.CapacityTypeSpot {
		return referencePrices().SpotPrice(it, l[corev1.LabelTopologyZone])
	}
	return referencePrices().OnDemandPrice(it)
}
