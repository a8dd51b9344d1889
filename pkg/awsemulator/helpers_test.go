package awsemulator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// clients are SDK clients built from the emulator's AWSConfig, the standard retryer
// kept but with a 10ms backoff so retry tests stay quick.
type clients struct {
	e       *awsemulator.Emulator
	cfg     aws.Config
	ec2     *ec2.Client
	iam     *iam.Client
	ssm     *ssm.Client
	sqs     *sqs.Client
	eks     *eks.Client
	pricing *pricing.Client
}

func fastRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.NewExponentialJitterBackoff(10 * time.Millisecond)
		o.RateLimiter = ratelimit.None
	})
}

func newClients(e *awsemulator.Emulator) *clients {
	cfg := e.AWSConfig()
	cfg.Retryer = fastRetryer
	pcfg := cfg.Copy()
	pcfg.Region = "us-east-1" // the Pricing API's endpoint region for US regions
	return &clients{
		e: e, cfg: cfg,
		ec2: ec2.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg),
		sqs: sqs.NewFromConfig(cfg), eks: eks.NewFromConfig(cfg), pricing: pricing.NewFromConfig(pcfg),
	}
}

func start(t testing.TB) *clients {
	t.Helper()
	return newClients(awsemulator.StartForTest(t, awsemulator.Options{}))
}

var ctx = context.Background()

// errorCode is the AWS error code of err ("" if none).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func expectError(t *testing.T, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected error %s, got success", code)
	}
	if got := errorCode(err); got != code {
		t.Fatalf("expected error code %s, got %q (%v)", code, got, err)
	}
	if status != 0 && httpStatus(err) != status {
		t.Fatalf("expected HTTP status %d for %s, got %d", status, code, httpStatus(err))
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
