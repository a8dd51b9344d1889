package sdkmetrics

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

// A call the emulator throttles twice before answering is one request (code
// 200, two retries) of three attempts: two throttled, one answered.
func TestRequestsAttemptsAndRetriesOfACall(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(e)
	Install(&cfg)
	client := ec2.NewFromConfig(cfg)
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "RequestLimitExceeded", Count: 2})
	if _, err := client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(requests.WithLabelValues("EC2", "DescribeSubnets", "200")); got != 1 {
		t.Errorf("aws_sdk_go_request_total{EC2,DescribeSubnets,200} %v, want 1", got)
	}
	if got := testutil.ToFloat64(attempts.WithLabelValues("EC2", "DescribeSubnets", "200")); got != 1 {
		t.Errorf("answered attempts %v, want 1", got)
	}
	throttled := 0.0
	for _, code := range []string{"400", "503"} {
		throttled += testutil.ToFloat64(attempts.WithLabelValues("EC2", "DescribeSubnets", code))
	}
	if throttled != 2 {
		t.Errorf("throttled attempts %v, want 2", throttled)
	}
	if n := testutil.CollectAndCount(retries); n != 1 {
		t.Fatalf("%d retry-count series, want 1", n)
	}
	if n := testutil.CollectAndCount(requestDuration); n != 1 {
		t.Errorf("%d request duration series, want 1", n)
	}
}
