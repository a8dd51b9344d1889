package env

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// NewManager is a controller-runtime manager on cfg for a test that runs
// controllers the way cmd/karpenter does (cached client, watches). It serves
// no metrics or health probes (test binaries run side by side and would fight
// over ports), and controller names may repeat: several tests in one process
// register the same controllers. Its cache slims and shares objects as
// cmd/karpenter's does (informer.Transform), so the controllers are tested on
// what they read in production.
func NewManager(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) manager.Manager {
	t.Helper()
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:                  cache.Options{DefaultTransform: informer.Transform},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// RunManager starts mgr until ctx is cancelled or the test ends, whichever
// comes first; at the end of the test it waits for the manager to stop and
// fails the test if the manager returned an error.
func RunManager(ctx context.Context, t testing.TB, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
