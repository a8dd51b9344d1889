package awstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Launch describes an instance for LaunchInstance. Zero fields get
// defaults: m5.large, on-demand, the subnet with most free addresses, an
// x86_64 image of Amazon's.
type Launch struct {
	ClusterName      string
	NodePool         string
	NodeClass        string
	InstanceType     string
	SubnetID         string
	ImageID          string
	SecurityGroupIDs []string
	// Tags replace the Karpenter tags when not nil (an instance that is
	// not Karpenter's, say).
	Tags map[string]string
}

// KarpenterTags are the tags CreateFleet puts on a Karpenter instance.
func KarpenterTags(cluster, nodePool, nodeClass string) map[string]string {
	return map[string]string{
		awsv1.TagClusterPrefix + cluster: "owned",
		awsv1.TagEKSClusterName:          cluster,
		v1.NodePoolLabelKey:              nodePool,
		awsv1.TagEC2NodeClass:            nodeClass,
	}
}

// LaunchInstance launches one instance the way the launch path does (a
// launch template, then an instant CreateFleet carrying the tags), but
// straight through the SDK, so tests of what happens to instances do not
// depend on the launch code. It returns the instance ID.
func LaunchInstance(ctx context.Context, t testing.TB, cfg aws.Config, l Launch) string {
	t.Helper()
	api := ec2.NewFromConfig(cfg)
	if l.InstanceType == "" {
		l.InstanceType = "m5.large"
	}
	tags := l.Tags
	if tags == nil {
		tags = KarpenterTags(l.ClusterName, l.NodePool, l.NodeClass)
	}
	if l.ImageID == "" {
		imgs, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
			Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
		if err != nil || len(imgs.Images) == 0 {
			t.Fatalf("finding an x86_64 image: %v", err)
		}
		l.ImageID = aws.ToString(imgs.Images[0].ImageId)
	}
	name := fmt.Sprintf("awstest/%s-%d", l.NodeClass, seq())
	data := &ec2types.RequestLaunchTemplateData{SecurityGroupIds: l.SecurityGroupIDs}
	if l.ImageID != "" {
		data.ImageId = aws.String(l.ImageID)
	}
	lt, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data})
	if err != nil {
		t.Fatalf("creating launch template: %v", err)
	}
	override := ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(l.InstanceType)}
	if l.SubnetID != "" {
		override.SubnetId = aws.String(l.SubnetID)
	}
	var tagList []ec2types.Tag
	for k, v := range tags {
		tagList = append(tagList, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := api.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{override},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tagList}},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		var errs []string
		for _, fe := range out.Errors {
			errs = append(errs, aws.ToString(fe.ErrorCode)+": "+aws.ToString(fe.ErrorMessage))
		}
		t.Fatalf("CreateFleet launched %d instances, errors %v", len(out.Instances), errs)
	}
	return out.Instances[0].InstanceIds[0]
}

var counter atomic.Int64

func seq() int64 { return counter.Add(1) }
