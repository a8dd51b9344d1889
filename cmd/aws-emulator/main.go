// Command aws-emulator serves the AWS emulator of pkg/awsemulator on one endpoint:
// EC2, IAM, SSM, Pricing, SQS and EKS as aws-sdk-go-v2 speaks them, seeded with the
// default world (1,363 instance types, subnets, security groups, AMIs and SSM
// parameters, an EKS cluster). It prints the endpoint and the environment to export
// so the SDK's standard settings reach it, then serves until SIGTERM or SIGINT.
// Faults are injected over HTTP: POST <endpoint>/_emulator/faults (see control.go).
// --policy FILE enforces an IAM identity policy (docs/aws/controller-policy.json) on
// every request, as IAM would for the access key.
// With --kubeconfig, running instances join that cluster as KWOK-run Nodes; with
// --event-queue, EventBridge events (state changes, POST /_emulator/events) go to that
// SQS queue.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "aws-emulator:", err)
		os.Exit(1)
	}
}

// run parses args, starts the emulator, prints how to reach it to out and serves until
// a signal arrives (or stop is closed, for tests).
func run(args []string, out io.Writer, stop <-chan struct{}) error {
	fs := flag.NewFlagSet("aws-emulator", flag.ContinueOnError)
	var o awsemulator.Options
	var zones, eventQueue string
	fs.StringVar(&o.Region, "region", "us-west-2", "AWS region the emulator serves")
	fs.StringVar(&zones, "zones", "", "comma-separated availability zones (default <region>a..d)")
	fs.StringVar(&o.ClusterName, "cluster-name", "karpenter-demo", "name of the EKS cluster, its subnets' and security groups' discovery tag")
	fs.StringVar(&o.KubernetesVersion, "kubernetes-version", "1.34", "Kubernetes version of the EKS cluster")
	fs.StringVar(&o.AccountID, "account-id", "123456789012", "AWS account ID")
	fs.StringVar(&o.AccessKeyID, "access-key-id", "AKIAEMULATOR00000000", "access key ID requests must be signed with")
	fs.StringVar(&o.SecretAccessKey, "secret-access-key", "emulator-secret-access-key", "secret access key requests must be signed with")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to listen on")
	var policyFile, nodeRole, queue string
	fs.StringVar(&policyFile, "policy", "", "IAM policy JSON file to enforce on every request (e.g. docs/aws/controller-policy.json; ${AWS_PARTITION}, ${AWS_REGION}, ${AWS_ACCOUNT_ID}, ${CLUSTER_NAME}, ${NODE_ROLE}, ${INTERRUPTION_QUEUE} are rendered); denied calls answer AWS's authorization errors")
	fs.StringVar(&nodeRole, "policy-node-role", "", "${NODE_ROLE} of --policy (default KarpenterNodeRole-<cluster-name>)")
	fs.StringVar(&queue, "policy-interruption-queue", "", "${INTERRUPTION_QUEUE} of --policy (default <cluster-name>)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster that running instances join as KWOK-run Nodes (registered from their user data); empty: none")
	fs.DurationVar(&o.BootDelay, "boot-delay", 2*time.Second, "how long instances stay pending (and shutting-down) before running (terminated)")
	fs.StringVar(&eventQueue, "event-queue", "", "SQS queue to create and deliver EventBridge events to (Karpenter's INTERRUPTION_QUEUE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if zones != "" {
		for _, z := range strings.Split(zones, ",") {
			if z = strings.TrimSpace(z); z != "" {
				o.Zones = append(o.Zones, z)
			}
		}
	}
	var policy []byte
	if policyFile != "" {
		b, err := os.ReadFile(policyFile)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		policy = b
	}
	e, err := awsemulator.Start(o)
	if err != nil {
		return err
	}
	defer e.Close()
	if policy != nil {
		vars := map[string]string{}
		if nodeRole != "" {
			vars["NODE_ROLE"] = nodeRole
		}
		if queue == "" {
			queue = eventQueue
		}
		if queue != "" {
			vars["INTERRUPTION_QUEUE"] = queue
		}
		if err := e.SetPolicy(e.RenderPolicy(string(policy), vars)); err != nil {
			return fmt.Errorf("--policy %s: %w", policyFile, err)
		}
		fmt.Fprintf(out, "enforcing IAM policy %s (denials: GET %s/_emulator/denials)\n", policyFile, e.Endpoint())
	}
	if eventQueue != "" {
		if _, err := e.CreateQueue(eventQueue); err != nil {
			return fmt.Errorf("--event-queue %s: %w", eventQueue, err)
		}
		e.SetEventQueue(eventQueue)
	}
	fmt.Fprintf(out, "AWS emulator listening on %s\n", e.Endpoint())
	for _, kv := range e.Env() {
		fmt.Fprintf(out, "export %s\n", kv)
	}
	if eventQueue != "" {
		fmt.Fprintf(out, "export INTERRUPTION_QUEUE=%s\n", eventQueue)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	select {
	case <-sig:
	case <-stop:
	}
	return e.Close()
}
