package plan

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	awscp "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

// CloudProvider picks the provider the snapshot's NodePools use, by their
// nodeClassRef groups, and returns it in planning form. KWOK: its catalog
// in-process (INSTANCE_TYPES_FILE_PATH as the controller reads it). AWS: the
// AWS provider's instance type provider, configured from the environment as
// the controller is (AWS_REGION, AWS_ENDPOINT_URL, credentials), which makes
// only read calls (DescribeInstanceTypes, DescribeInstanceTypeOfferings,
// Pricing GetProducts, DescribeSpotPriceHistory).
func CloudProvider(ctx context.Context, snap *snapshot.Snapshot, clk clock.Clock) (cloudprovider.CloudProvider, error) {
	for _, np := range snapshot.All[*v1.NodePool](snap) {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.SchemeGroupVersion.Group {
			cfg, err := settings.LoadAWSConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("nodepool %s uses %s %s, so AWS instance types are needed: %w", np.Name, ref.Kind, ref.Name, err)
			}
			return AWSCloudProvider(ctx, snap, cfg, clk), nil
		}
	}
	catalog, err := kwok.LoadInstanceTypesFromEnv()
	if err != nil {
		return nil, err
	}
	// The provider's kube client is only used by Create/Delete/Get/List, which
	// the planner never calls; the snapshot's read-only store stands in.
	return kwok.New(ctx, snap.Store, clk, catalog), nil
}

// AWSCloudProvider is the AWS provider over the snapshot's EC2NodeClasses
// (their status: subnets and zones as the cluster's controller resolved
// them), pricing with live prices when the Pricing API and EC2 answer, the
// static reference prices otherwise. Only GetInstanceTypes is ever called.
func AWSCloudProvider(ctx context.Context, snap *snapshot.Snapshot, cfg aws.Config, clk clock.Clock) cloudprovider.CloudProvider {
	httpclient.Configure(&cfg)
	ec2Client := ec2.NewFromConfig(cfg)
	prices := pricing.NewProvider(ec2Client, pricing.NewPricingClient(cfg), cfg.Region, false, clk)
	// A refresh is read-only; when it fails the static prices stay.
	_ = pricing.NewController(prices, clk).Reconcile(ctx)
	its := instancetype.NewProvider(ec2Client, prices, instancetype.NewUnavailableOfferings(clk), clk,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: settings.DefaultVMMemoryOverheadPercent})
	return awscp.New(snap.Store, its)
}
