// Command karpenter is the controller: it watches pods the kube-scheduler cannot
// place, launches NodeClaims for them through a cloud provider, and manages the
// NodeClaims' lifecycle. Settings are flags with upstream's environment variables
// as defaults (see pkg/operator/options); --cloud-provider picks kwok (default,
// simulated nodes) or aws.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/kwok"
	cpmetrics "github.com/karpenter-go/karpenter/pkg/cloudprovider/metrics"
	"github.com/karpenter-go/karpenter/pkg/controllers/disruption"
	"github.com/karpenter-go/karpenter/pkg/controllers/disruption/orchestration"
	nodemetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/node"
	podmetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/pod"
	statusmetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// ErrAWSNotImplemented: the AWS provider lands in a later issue.
var ErrAWSNotImplemented = errors.New("cloud provider aws is not implemented yet; use --cloud-provider=kwok")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "karpenter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	opts, err := options.Parse(args, getenv)
	if err != nil {
		return err
	}
	if opts.CloudProvider == "aws" {
		return ErrAWSNotImplemented
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	op, err := operator.New(ctx, opts, cfg)
	if err != nil {
		return err
	}
	mgr, kube, clk := op.Manager, op.Client, op.Clock

	catalog, err := kwok.LoadInstanceTypes(opts.InstanceTypesFilePath)
	if err != nil {
		return fmt.Errorf("loading KWOK instance types: %w", err)
	}
	var cp cloudprovider.CloudProvider = cpmetrics.Decorate(kwok.New(ctx, kube, clk, catalog))
	if err := kwok.NewNodeClassController(kube, clk).Register(mgr); err != nil {
		return err
	}

	cluster := state.NewCluster(clk, kube)
	for _, c := range informer.All(kube, cluster) {
		if err := c.Register(mgr); err != nil {
			return fmt.Errorf("registering %s: %w", c.Name(), err)
		}
	}
	prov := provisioning.NewProvisioner(kube, cp, cluster, op.Recorder, clk, provisioning.Options{
		BatchIdleDuration: opts.BatchIdleDuration,
		BatchMaxDuration:  opts.BatchMaxDuration,
		PreferencePolicy:  opts.PreferencePolicy,
		MinValuesPolicy:   opts.MinValuesPolicy,
	})
	if err := mgr.Add(prov); err != nil {
		return err
	}
	if err := provisioning.NewPodTrigger(kube, prov.Batcher()).Register(mgr, opts.CPUConcurrency(10, 1000)); err != nil {
		return err
	}
	// Decide once right after start-up (or winning leadership): pods that went
	// pending while no controller ran would otherwise wait for their re-trigger.
	prov.Trigger(types.UID("startup"))
	if !opts.DisableClusterStateObservability {
		if err := mgr.Add(&provisioning.MetricsExporter{Cluster: cluster, Clock: clk}); err != nil {
			return err
		}
		// Per-node gauges and cluster utilization (upstream's metrics.node controller).
		nodeMetrics, err := nodemetrics.NewController(cluster, clk, crmetrics.Registry, kwok.WellKnownLabels...)
		if err != nil {
			return err
		}
		if err := mgr.Add(nodeMetrics); err != nil {
			return err
		}
		// Pod bound/startup latencies and waiting-pod gauges (upstream's metrics.pod controller).
		podMetrics, err := podmetrics.NewController(kube, clk, crmetrics.Registry)
		if err != nil {
			return err
		}
		if err := podMetrics.Register(mgr); err != nil {
			return err
		}
		// operator_<kind>_status_condition_* and _termination_* (upstream's operatorpkg status controllers).
		for _, kind := range []statusmetrics.Kind{
			statusmetrics.NodeClaimKind(kwok.NodeClassLabelKey),
			statusmetrics.NodePoolKind(),
			statusmetrics.NodeKind(kwok.NodeClassLabelKey),
		} {
			statusMetrics, err := statusmetrics.NewController(kube, clk, crmetrics.Registry, kind)
			if err != nil {
				return err
			}
			if err := statusMetrics.Register(mgr); err != nil {
				return err
			}
		}
	}
	if err := nodeclaim.Register(ctx, mgr, kube, cp, clk, op.Recorder); err != nil {
		return err
	}
	if err := nodepool.Register(mgr, kube, cp, clk); err != nil {
		return err
	}
	// The disruption orchestration queue (the disruption controller hands it its commands).
	disruptionQueue := orchestration.NewQueue(kube, cluster, op.Recorder, clk)
	if err := disruptionQueue.Register(mgr); err != nil {
		return err
	}
	// The disruption controller: a pass every 10 s, commands to the queue.
	if err := mgr.Add(disruption.NewController(kube, cluster, prov, cp, disruptionQueue, op.Recorder, clk, disruption.Options{
		SpotToSpotConsolidation: opts.FeatureGate(options.FeatureSpotToSpotConsolidation),
	})); err != nil {
		return err
	}
	return op.Start(ctx)
}
