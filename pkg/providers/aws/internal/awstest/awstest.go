// Package awstest gives the AWS provider tests an SDK configuration for the
// emulator: the SDK's standard retryer (same attempts, same retryable codes)
// with backoff capped at a few milliseconds, so retry tests do not wait the
// seconds production backoff would.
package awstest

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// Config is e.AWSConfig with a fast-backoff standard retryer.
func Config(e *awsemulator.Emulator) aws.Config {
	cfg := e.AWSConfig()
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 5 * time.Millisecond })
	}
	return cfg
}
