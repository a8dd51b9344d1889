package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider/providers"
)

func TestAWSSaysNotImplemented(t *testing.T) {
	err := run(context.Background(), []string{"--cloud-provider=aws"}, func(string) string { return "" })
	if !errors.Is(err, providers.ErrNotImplemented) || !strings.Contains(err.Error(), "cloud provider aws is not implemented yet") {
		t.Fatalf("want the not-implemented error, got %v", err)
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
