package awsemulator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// With the SDK's default retryer untouched (3 attempts, real backoff), two throttles
// are absorbed: the call succeeds on the third attempt.
func TestThrottlingRetriedByDefaultRetryer(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	client := ec2.NewFromConfig(e.AWSConfig())
	e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "RequestLimitExceeded", Count: 2})
	out, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	ok(t, err)
	if len(out.Subnets) != 8 || e.Calls("ec2", "DescribeSubnets") != 3 {
		t.Fatalf("%d subnets after %d calls", len(out.Subnets), e.Calls("ec2", "DescribeSubnets"))
	}
	// The fault is spent: the next call goes straight through.
	_, err = client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	ok(t, err)
	if e.Calls("ec2", "DescribeSubnets") != 4 {
		t.Fatalf("calls %d", e.Calls("ec2", "DescribeSubnets"))
	}
}

// A RequestLimitExceeded storm longer than the SDK's 3 attempts surfaces the code.
func TestThrottlingStormExhaustsRetries(t *testing.T) {
	c := start(t)
	c.e.InjectFault(awsemulator.Fault{Service: "ec2", Code: "RequestLimitExceeded", Count: 5})
	_, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{})
	expectError(t, err, "RequestLimitExceeded", 503)
	if c.e.Calls("ec2", "DescribeInstanceTypes") != 3 {
		t.Fatalf("attempts: %d", c.e.Calls("ec2", "DescribeInstanceTypes"))
	}
	// Two faults left: the next call needs its third attempt.
	_, err = c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{})
	ok(t, err)
	if c.e.Calls("ec2", "DescribeInstanceTypes") != 6 {
		t.Fatalf("attempts: %d", c.e.Calls("ec2", "DescribeInstanceTypes"))
	}
	// Other services are untouched by an ec2 fault.
	if _, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/x"}}); err != nil {
		t.Fatal(err)
	}
}

func TestServerErrorsRetried(t *testing.T) {
	c := start(t)
	c.e.InjectFault(awsemulator.Fault{Service: "iam", Action: "GetRole", Code: "InternalError", Count: 1})
	c.e.InjectFault(awsemulator.Fault{Service: "ssm", Code: "ServiceUnavailable", Count: 1})
	_, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	_, err = c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/x"}})
	ok(t, err)
	if c.e.Calls("iam", "GetRole") != 2 || c.e.Calls("ssm", "GetParameters") != 2 {
		t.Fatalf("calls iam %d ssm %d", c.e.Calls("iam", "GetRole"), c.e.Calls("ssm", "GetParameters"))
	}
	// Without retries the 5xx surfaces with its status.
	c.e.InjectFault(awsemulator.Fault{Service: "iam", Code: "InternalError", Count: 1})
	_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")}, func(o *iam.Options) {
		o.RetryMaxAttempts = 1
	})
	expectError(t, err, "InternalError", 500)
}

// Rate 0.5 fires on every second matching request, deterministically.
func TestFaultRateIsDeterministic(t *testing.T) {
	c := start(t)
	c.e.InjectFault(awsemulator.Fault{Service: "ssm", Action: "GetParameters", Code: "ThrottlingException", Rate: 0.5})
	var pattern []bool
	for i := 0; i < 6; i++ {
		_, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/x"}}, func(o *ssm.Options) { o.RetryMaxAttempts = 1 })
		if err != nil {
			expectError(t, err, "ThrottlingException", 400)
		}
		pattern = append(pattern, err == nil)
	}
	want := []bool{true, false, true, false, true, false}
	for i := range want {
		if pattern[i] != want[i] {
			t.Fatalf("success pattern %v, want %v", pattern, want)
		}
	}
	c.e.ClearFaults()
	_, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/x"}}, func(o *ssm.Options) { o.RetryMaxAttempts = 1 })
	ok(t, err)
}

func TestFaultLatency(t *testing.T) {
	c := start(t)
	c.e.InjectFault(awsemulator.Fault{Service: "eks", Latency: 300 * time.Millisecond, Count: 1})
	began := time.Now()
	_, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/x"}})
	ok(t, err)
	if time.Since(began) >= 300*time.Millisecond {
		t.Fatal("latency of an eks fault must not slow ssm")
	}
	began = time.Now()
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	ok(t, err)
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Fatalf("latency fault: answered after %v", d)
	}
}

func TestControlEndpoint(t *testing.T) {
	c := start(t)
	post := func(path string, v any) int {
		b, _ := json.Marshal(v)
		resp, err := http.Post(c.e.Endpoint()+path, "application/json", bytes.NewReader(b))
		ok(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post("/_emulator/faults", map[string]any{"Service": "ec2", "Action": "DescribeImages", "Code": "RequestLimitExceeded", "Count": 3, "Latency": "1ms"}); s != 200 {
		t.Fatalf("POST fault: %d", s)
	}
	if s := post("/_emulator/faults", map[string]any{"Rate": 2}); s != 400 {
		t.Fatalf("bad fault accepted: %d", s)
	}
	_, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"self"}})
	expectError(t, err, "RequestLimitExceeded", 503)

	resp, err := http.Get(c.e.Endpoint() + "/_emulator/calls")
	ok(t, err)
	var calls map[string]int
	ok(t, json.NewDecoder(resp.Body).Decode(&calls))
	resp.Body.Close()
	if calls["ec2/DescribeImages"] != 3 {
		t.Fatalf("calls over HTTP: %v", calls)
	}

	c.e.InjectFault(awsemulator.Fault{Service: "ec2", Code: "RequestLimitExceeded"})
	req, _ := http.NewRequest(http.MethodDelete, c.e.Endpoint()+"/_emulator/faults", nil)
	resp, err = http.DefaultClient.Do(req)
	ok(t, err)
	resp.Body.Close()
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"self"}})
	ok(t, err)

	if s := post("/_emulator/deny", map[string]any{"Service": "ec2", "Action": "RunInstances", "Deny": true}); s != 200 {
		t.Fatalf("POST deny: %d", s)
	}
	_, err = c.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ImageId: aws.String("ami-1")})
	expectError(t, err, "UnauthorizedOperation", 403)
}
