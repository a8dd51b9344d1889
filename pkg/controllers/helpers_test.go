package controllers_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// startOperator builds what cmd/karpenter builds (the KWOK bundle, cluster
// state, every controller through Register) under a real manager on a fresh
// apiserver, with the given flags, and runs it until the test ends.
func startOperator(t *testing.T, args ...string) (context.Context, *env.Environment, *cloudprovider.Bundle) {
	t.Helper()
	e := env.StartT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mgr := env.NewManager(t, e.Config, e.Scheme)
	opts, err := options.Parse(args, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	recorder := mgr.GetEventRecorderFor("karpenter") //nolint:staticcheck // the controllers take a record.EventRecorder
	cluster := state.NewCluster(clk, mgr.GetClient())
	bundle, err := kwok.NewProvider().New(ctx, cloudprovider.Deps{
		Manager: mgr, KubeClient: mgr.GetClient(), Clock: clk, Recorder: recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.Register(ctx, mgr, controllers.Deps{
		KubeClient: mgr.GetClient(), Clock: clk, Recorder: recorder, Options: opts, Cluster: cluster, Bundle: bundle,
	}); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	return ctx, e, bundle
}

// createDefaultPool creates the KWOKNodeClass and NodePool "default" (linux,
// never consolidated: nothing may be disrupted while a test looks) with plain
// creates: running controllers write status concurrently, which an
// apply-with-status would race with.
func createDefaultPool(ctx context.Context, t *testing.T, e *env.Environment) *v1.NodePool {
	t.Helper()
	create(ctx, t, e, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	np := fixtures.NodePool("default", fixtures.WithConsolidateAfter("Never"))
	create(ctx, t, e, np)
	return np
}

func create(ctx context.Context, t *testing.T, e *env.Environment, o client.Object) {
	t.Helper()
	if err := e.Client.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil {
		t.Fatal(err)
	}
}
