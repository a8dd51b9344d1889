package httpclient_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
)

// Large answers (a page of 100 instance types, ~220 kB) arrive intact on the
// first attempt with the wrapped client. Without it about half of them are
// lost to a connection net/http closes under the SDK, so the unwrapped client
// is expected to fail some with retries off.
func TestLargeResponsesSurviveTheFirstAttempt(t *testing.T) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	run := func(wrapped bool) (failures int) {
		cfg := em.AWSConfig()
		cfg.RetryMaxAttempts = 1
		// The emulator's own config hides WriteTo already; start from the SDK's default client.
		cfg.HTTPClient = nil
		if wrapped {
			httpclient.Configure(&cfg)
		}
		c := ec2.NewFromConfig(cfg)
		for range 20 {
			if _, err := c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{}); err != nil {
				failures++
			}
		}
		return failures
	}
	if n := run(true); n != 0 {
		t.Fatalf("%d of 20 large answers failed with the wrapped client", n)
	}
	// The race is timing dependent, so the unwrapped run is reported, not asserted.
	t.Logf("unwrapped SDK client: %d of 20 large answers lost to a closed connection", run(false))
}
