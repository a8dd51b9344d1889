package awsemulator_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func TestSmoke(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	ctx := context.Background()
	cfg := e.AWSConfig()
	ec := ec2.NewFromConfig(cfg)
	out, err := ec.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("subnets %d %+v", len(out.Subnets), out.Subnets[0])
	p := ec2.NewDescribeInstanceTypesPaginator(ec, &ec2.DescribeInstanceTypesInput{})
	n := 0
	for p.HasMorePages() {
		o, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(o.InstanceTypes)
	}
	t.Logf("types %d calls %d", n, e.Calls("ec2", "DescribeInstanceTypes"))
	sm := ssm.NewFromConfig(cfg)
	po, err := sm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("param %s", *po.Parameter.Value)
	_, err = sm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nope")})
	t.Logf("err %v", err)
	im := iam.NewFromConfig(cfg)
	r, err := im.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("role %s", *r.Role.Arn)
	_, err = im.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("x")})
	t.Logf("err %v", err)
	ek := eks.NewFromConfig(cfg)
	cl, err := ek.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster %s %s", *cl.Cluster.Version, *cl.Cluster.Endpoint)
	_, err = ek.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("x")})
	t.Logf("err %v", err)
	pcfg := cfg.Copy()
	pcfg.Region = "us-east-1"
	pr := pricing.NewFromConfig(pcfg)
	pp, err := pr.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("price %v", pp.PriceList)
}
