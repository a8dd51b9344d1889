package main

import (
	"context"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/providers/aws"
)

// TestAWSNeedsAClusterName: choosing aws without CLUSTER_NAME stops start-up
// before anything connects, naming the setting.
func TestAWSNeedsAClusterName(t *testing.T) {
	err := run(context.Background(), []string{"--cloud-provider=aws"}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "cluster-name (CLUSTER_NAME) is required for the aws cloud provider") {
		t.Fatalf("want an error naming CLUSTER_NAME, got %v", err)
	}
}

// TestAWSWithAClusterNameParses: with a cluster name the aws provider is the
// one chosen, its settings read from flags and the environment.
func TestAWSWithAClusterNameParses(t *testing.T) {
	opts, provider, err := parse([]string{"--cloud-provider=aws", "--reserved-enis=1"}, func(k string) string {
		return map[string]string{"CLUSTER_NAME": "demo", "VM_MEMORY_OVERHEAD_PERCENT": "0.1"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := provider.(*aws.Provider)
	if !ok || provider.Name() != "aws" || opts.CloudProvider != "aws" {
		t.Fatalf("provider %T %q, core %q", provider, provider.Name(), opts.CloudProvider)
	}
	if p.Options.ClusterName != "demo" || opts.ClusterName != "demo" || p.Options.ReservedENIs != 1 || p.Options.VMMemoryOverheadPercent != 0.1 {
		t.Errorf("aws settings %+v, core cluster %q", p.Options, opts.ClusterName)
	}
}

func TestBadSettingsStopStartup(t *testing.T) {
	err := run(context.Background(), nil, func(k string) string {
		if k == "BATCH_MAX_DURATION" {
			return "forever"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "BATCH_MAX_DURATION") {
		t.Fatalf("want an error naming BATCH_MAX_DURATION, got %v", err)
	}
}
