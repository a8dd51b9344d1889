package awsemulator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// callEach calls one operation of every service with cfg (pricing signs for
// pricingRegion) and returns the errors by service.
func callEach(cfg aws.Config, pricingRegion string) map[string]error {
	pcfg := cfg.Copy()
	pcfg.Region = pricingRegion
	errs := map[string]error{}
	_, errs["ec2"] = ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	_, errs["iam"] = iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	_, errs["ssm"] = ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	_, errs["sqs"] = sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{})
	_, errs["pricing"] = pricing.NewFromConfig(pcfg).GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)})
	_, errs["eks"] = eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	return errs
}

func TestSigV4Accepted(t *testing.T) {
	c := start(t)
	for svc, err := range callEach(c.cfg, "us-east-1") {
		if err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
	}
	// IAM is global: the SDK signs it for us-east-1 against AWS's endpoint.
	cfg := c.cfg.Copy()
	cfg.Region = "us-east-1"
	if _, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")}); err != nil {
		t.Fatalf("IAM signed for us-east-1: %v", err)
	}
	// The Pricing API answers in its own regions only.
	for _, region := range []string{"ap-south-1", "eu-central-1"} {
		pcfg := c.cfg.Copy()
		pcfg.Region = region
		if _, err := pricing.NewFromConfig(pcfg).GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)}); err != nil {
			t.Fatalf("pricing signed for %s: %v", region, err)
		}
	}
}

type authCase struct {
	name   string
	mutate func(cfg *aws.Config)
	codes  map[string]string // service -> error code
	status map[string]int
}

func TestSigV4Rejected(t *testing.T) {
	cases := []authCase{
		{
			name: "wrong secret",
			mutate: func(cfg *aws.Config) {
				cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIAEMULATOR00000000", "wrong", "")
			},
			codes: map[string]string{"ec2": "AuthFailure", "iam": "SignatureDoesNotMatch", "ssm": "InvalidSignatureException",
				"sqs": "InvalidSignatureException", "pricing": "InvalidSignatureException", "eks": "InvalidSignatureException"},
			status: map[string]int{"ec2": 401, "iam": 403, "ssm": 400, "sqs": 400, "pricing": 400, "eks": 403},
		},
		{
			name: "unknown access key",
			mutate: func(cfg *aws.Config) {
				cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIAUNKNOWN", "emulator-secret-access-key", "")
			},
			codes: map[string]string{"ec2": "AuthFailure", "iam": "InvalidClientTokenId", "ssm": "UnrecognizedClientException",
				"sqs": "UnrecognizedClientException", "pricing": "UnrecognizedClientException", "eks": "UnrecognizedClientException"},
			status: map[string]int{"ec2": 401, "iam": 403, "ssm": 400, "sqs": 400, "pricing": 400, "eks": 403},
		},
		{
			name:   "wrong region",
			mutate: func(cfg *aws.Config) { cfg.Region = "eu-west-1" },
			codes: map[string]string{"ec2": "AuthFailure", "iam": "SignatureDoesNotMatch", "ssm": "InvalidSignatureException",
				"sqs": "InvalidSignatureException", "pricing": "InvalidSignatureException", "eks": "InvalidSignatureException"},
			status: map[string]int{"ec2": 401, "iam": 403, "ssm": 400, "sqs": 400, "pricing": 400, "eks": 403},
		},
		{
			name:   "no auth",
			mutate: func(cfg *aws.Config) { cfg.Credentials = aws.AnonymousCredentials{} },
			codes: map[string]string{"ec2": "AuthFailure", "iam": "MissingAuthenticationToken", "ssm": "MissingAuthenticationTokenException",
				"sqs": "MissingAuthenticationTokenException", "pricing": "MissingAuthenticationTokenException", "eks": "MissingAuthenticationTokenException"},
			status: map[string]int{"ec2": 401, "iam": 403, "ssm": 400, "sqs": 400, "pricing": 400, "eks": 403},
		},
	}
	c := start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := c.cfg.Copy()
			tc.mutate(&cfg)
			pricingRegion := "us-east-1"
			if tc.name == "wrong region" {
				pricingRegion = "us-west-2" // Pricing has no endpoint there
			}
			errs := callEach(cfg, pricingRegion)
			for svc, code := range tc.codes {
				expectError(t, errs[svc], code, tc.status[svc])
			}
		})
	}
	// None of the rejected requests reached a handler, and every one was counted.
	if got := c.e.Calls("ec2", "DescribeSubnets"); got != 4 {
		t.Fatalf("rejected DescribeSubnets counted %d times, want 4", got)
	}
}

func TestSigV4TamperedRequest(t *testing.T) {
	c := start(t)
	// A signed request whose body was changed after signing.
	cfg := c.cfg.Copy()
	cfg.HTTPClient = tamperingClient{}
	_, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	expectError(t, err, "AuthFailure", 401)
}

type tamperingClient struct{}

func (tamperingClient) Do(r *http.Request) (*http.Response, error) {
	body := "Action=DescribeSecurityGroups&Version=2016-11-15"
	r2 := r.Clone(r.Context())
	r2.Body = http.NoBody
	r2.ContentLength = int64(len(body))
	r2.Body = readCloser{strings.NewReader(body)}
	return http.DefaultClient.Do(r2)
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
