// Command karpenter is the controller: it watches pods the kube-scheduler cannot
// place, launches NodeClaims for them through a cloud provider, and manages the
// NodeClaims' lifecycle. Settings are flags with upstream's environment variables
// as defaults (pkg/operator/options for the core's, each provider's own);
// --cloud-provider picks one of the providers pkg/providers lists.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/webhook/conversion"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "karpenter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	opts, provider, err := parse(args, getenv)
	if err != nil {
		return err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	op, err := operator.New(ctx, opts, cfg)
	if err != nil {
		return err
	}
	gates, warnings := settingsReport(opts, provider)
	operator.ReportSettings(op.Logger, gates, warnings)
	cluster := state.NewCluster(op.Clock, op.Client)
	bundle, err := provider.New(ctx, cloudprovider.Deps{
		Manager: op.Manager, KubeClient: op.Client, Clock: op.Clock, Recorder: op.Recorder,
		FeatureGates: opts.FeatureGates,
	})
	if err != nil {
		return err
	}
	if err := controllers.Register(ctx, op.Manager, controllers.Deps{
		KubeClient: op.Client, Clock: op.Clock, Recorder: op.Recorder, Options: opts, Cluster: cluster, Bundle: bundle,
	}); err != nil {
		return err
	}
	if opts.DisableWebhook {
		return op.Start(ctx)
	}
	return runWithWebhook(ctx, op, opts, getenv)
}

// runWithWebhook runs the manager and, on every replica (the apiserver may
// call any of them through the Service), the conversion webhook; either
// failing stops both.
func runWithWebhook(ctx context.Context, op *operator.Operator, opts *options.Options, getenv func(string) string) error {
	ns := getenv("SYSTEM_NAMESPACE")
	if ns == "" {
		return errors.New("the conversion webhook (DISABLE_WEBHOOK=false) needs SYSTEM_NAMESPACE, the namespace of its Service and certificate Secret")
	}
	// Uncached: the webhook reads one Secret and three CRDs once, before the
	// manager's cache runs, and must not need list/watch on all Secrets.
	c, err := client.New(op.Config, client.Options{Scheme: op.Manager.GetScheme()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	webhookErr := make(chan error, 1)
	go func() {
		err := conversion.Run(ctx, conversion.Options{
			Client: c, Namespace: ns, ServiceName: opts.ServiceName, Port: int32(opts.WebhookPort),
			CertManager: opts.WebhookCertificate == options.WebhookCertificateCertManager,
		})
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("conversion webhook: %w", err)
			cancel()
		} else {
			err = nil
		}
		webhookErr <- err
	}()
	mgrErr := op.Start(ctx)
	cancel()
	return errors.Join(mgrErr, <-webhookErr)
}

// settingsReport gathers the feature gates (the core's and the provider's)
// and the start-up warnings of the settings.
func settingsReport(opts *options.Options, provider cloudprovider.Provider) ([]options.GateState, []string) {
	gates, warnings := opts.Gates.States(), append(opts.Gates.Warnings(), opts.SettingWarnings()...)
	if r, ok := provider.(cloudprovider.SettingsReporter); ok {
		for _, g := range r.FeatureGates() {
			gates = append(gates, options.GateState{Name: g.Name, Enabled: g.Enabled, Implemented: g.Implemented})
		}
		warnings = append(warnings, r.SettingWarnings()...)
	}
	return gates, warnings
}

// parse reads the core settings, --cloud-provider and the chosen provider's
// settings; every bad one is reported, each named.
func parse(args []string, getenv func(string) string) (*options.Options, cloudprovider.Provider, error) {
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	opts, finish := options.Register(fs, getenv)
	choose := providers.Register(fs, getenv, opts)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	coreErr := finish()
	provider, providerErr := choose()
	if err := errors.Join(coreErr, providerErr); err != nil {
		return nil, nil, err
	}
	return opts, provider, nil
}
