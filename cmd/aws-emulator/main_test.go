package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func TestRunServesUntilStopped(t *testing.T) {
	r, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--region", "eu-west-1", "--zones", "eu-west-1a,eu-west-1b", "--cluster-name", "demo", "--event-queue", "demo-events", "--boot-delay", "0s"}, w, stop)
		w.Close()
	}()
	env := map[string]string{}
	sc := bufio.NewScanner(r)
	for len(env) < 5 && sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	if env["AWS_REGION"] != "eu-west-1" || !strings.HasPrefix(env["AWS_ENDPOINT_URL"], "http://127.0.0.1:") {
		t.Fatalf("printed env %v", env)
	}
	cfg := aws.Config{
		Region:       env["AWS_REGION"],
		Credentials:  credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], ""),
		BaseEndpoint: aws.String(env["AWS_ENDPOINT_URL"]),
	}
	out, err := ec2.NewFromConfig(cfg).DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AvailabilityZones) != 2 || *out.AvailabilityZones[1].ZoneId != "euw1-az2" {
		t.Fatalf("zones %+v", out.AvailabilityZones)
	}
	q, err := sqs.NewFromConfig(cfg).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(env["INTERRUPTION_QUEUE"])})
	if err != nil || env["INTERRUPTION_QUEUE"] != "demo-events" {
		t.Fatalf("--event-queue: printed %q, GetQueueUrl %v", env["INTERRUPTION_QUEUE"], err)
	}
	_ = q
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	if err := run([]string{"--no-such-flag"}, io.Discard, nil); err == nil {
		t.Fatal("unknown flag accepted")
	}
	if err := run([]string{"extra"}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Fatalf("positional argument: %v", err)
	}
	if err := run([]string{"--kubeconfig", "/no/such/kubeconfig"}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "/no/such/kubeconfig") {
		t.Fatalf("missing kubeconfig: %v", err)
	}
	if err := run([]string{"--boot-delay", "soon"}, io.Discard, nil); err == nil {
		t.Fatal("bad boot delay accepted")
	}
	if err := run([]string{"--listen", "256.0.0.1:1"}, io.Discard, nil); err == nil {
		t.Fatal("bad listen address accepted")
	}
}

func TestRunEnforcesPolicy(t *testing.T) {
	r, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--policy", "../../docs/aws/controller-policy.json"}, w, stop)
		w.Close()
	}()
	env := map[string]string{}
	sc := bufio.NewScanner(r)
	enforcing := false
	for (len(env) < 4 || !enforcing) && sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		enforcing = enforcing || strings.HasPrefix(sc.Text(), "enforcing IAM policy ../../docs/aws/controller-policy.json")
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	cfg := aws.Config{
		Region:       env["AWS_REGION"],
		Credentials:  credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], ""),
		BaseEndpoint: aws.String(env["AWS_ENDPOINT_URL"]),
	}
	client := ec2.NewFromConfig(cfg)
	if _, err := client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("allowed read: %v", err)
	}
	_, err := client.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0"}})
	if err == nil || !strings.Contains(err.Error(), "InvalidInstanceID") {
		t.Fatalf("terminating a missing instance: %v", err)
	}
	_, err = client.RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: aws.String("ami-1"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if err == nil || !strings.Contains(err.Error(), "UnauthorizedOperation") {
		t.Fatalf("untagged RunInstances: %v", err)
	}
	resp, err := http.Get(env["AWS_ENDPOINT_URL"] + "/_emulator/denials")
	if err != nil {
		t.Fatal(err)
	}
	var denials []struct{ Action, Permission, Resource string }
	if err := json.NewDecoder(resp.Body).Decode(&denials); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(denials) != 1 || denials[0].Action != "RunInstances" || denials[0].Permission != "ec2:RunInstances" {
		t.Fatalf("denials %+v", denials)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsBadPolicy(t *testing.T) {
	if err := run([]string{"--policy", "no-such-file.json"}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "--policy") {
		t.Fatalf("missing policy file: %v", err)
	}
	f := t.TempDir() + "/p.json"
	if err := os.WriteFile(f, []byte(`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"arn:${NOPE}"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--policy", f}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "${NOPE}") {
		t.Fatalf("unrendered placeholder: %v", err)
	}
}
