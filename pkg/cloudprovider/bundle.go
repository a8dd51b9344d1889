package cloudprovider

import (
	"context"
	"flag"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Provider is how a cloud provider plugs into the operator. Each provider
// package exposes one constructor returning its Provider (e.g.
// kwok.NewProvider), and the registry (pkg/providers) lists them;
// --cloud-provider picks one by Name. A Provider value holds its own parsed
// settings, so the registry builds fresh values for every parse.
type Provider interface {
	// Name is the value of --cloud-provider that selects the provider, and
	// what its CloudProvider's Name returns.
	Name() string
	// AddFlags registers the provider's settings on fs, each a flag whose
	// default comes from the environment variable upstream names it (read
	// through env, which records values that do not parse). Every
	// provider's flags are registered, whichever is chosen, so flag names
	// must not collide with the core's (pkg/operator/options) or another
	// provider's; a setting both share (cluster-name) is looked up on fs.
	AddFlags(fs *flag.FlagSet, env Env)
	// Validate checks the provider's settings once flags are parsed. It runs
	// only for the chosen provider, before anything connects to the
	// cluster, so a bad setting stops start-up with an error that names it.
	Validate() error
	// New builds the provider's Bundle.
	New(ctx context.Context, deps Deps) (*Bundle, error)
	// Offline is what tools that plan and price without running the
	// provider's controllers (kubectl-karpenter) ask of it.
	Offline() Offline
	// ClusterRules are the cluster-wide RBAC rules the provider's
	// controllers need beyond the core's (its NodeClass kinds, ...). The Helm
	// chart's provider ClusterRole is generated from them (hack/chartrbac), so
	// a provider's permissions are stated once, here.
	ClusterRules() []ClusterRule
}

// ClusterRule is one RBAC rule of a provider's ClusterRole, with the reason
// the chart states above it when the rule is not evident from its resources.
type ClusterRule struct {
	rbacv1.PolicyRule
	Why string
}

// Env reads a setting's default from the environment variable upstream names
// it; a value that does not parse is remembered by the Env's owner, which
// reports every such variable at once (pkg/operator/options.Env).
type Env interface {
	String(name, def string) string
	Int(name string, def int) int
	Float64(name string, def float64) float64
	Bool(name string, def bool) bool
	Duration(name string, def time.Duration) time.Duration
}

// Deps are what the operator hands a Provider to build its Bundle.
type Deps struct {
	// Manager runs the controllers; providers reach its field indexers, API
	// reader and REST config through it.
	Manager manager.Manager
	// KubeClient is the manager's cached client.
	KubeClient client.Client
	// Clock: every controller that waits takes it, so tests can use a fake one.
	Clock clock.Clock
	// Recorder writes Kubernetes events.
	Recorder record.EventRecorder
	// FeatureGates are the core feature gates (FEATURE_GATES) by name; a
	// gate missing (nil: all) has upstream's default. The operator's options
	// package reads them so (options.FeatureGateValue).
	FeatureGates map[string]bool
}

// Bundle is everything the operator takes from one cloud provider.
type Bundle struct {
	// CloudProvider launches and removes instances. Its
	// GetSupportedNodeClasses names the provider's NodeClass kinds. The
	// operator wraps it with the metrics decorator
	// (pkg/cloudprovider/instrumented.Decorate) before handing it to the core's
	// controllers; a provider whose own controllers should be measured too
	// decorates it itself (Decorate does not wrap twice).
	CloudProvider CloudProvider
	// Controllers the provider runs besides the core's (NodeClass status,
	// pricing refresh, interruption handling, instance garbage collection,
	// ...), registered with the same manager.
	Controllers []Controller
	// WellKnownLabels are the labels the provider sets on nodes beyond
	// Karpenter's own (v1.WellKnownLabels); the node metrics report each as
	// a metric label.
	WellKnownLabels []string
	// NodeClassLabelKey is the label naming a node's NodeClass (e.g.
	// karpenter.kwok.sh/kwoknodeclass); the status metrics of NodeClaims and
	// Nodes carry it.
	NodeClassLabelKey string
}

// Controller is anything the operator registers with its manager: a
// reconciler with its watches, or a Runnable added with mgr.Add.
type Controller interface {
	Register(ctx context.Context, mgr manager.Manager) error
}

// ControllerFunc adapts a registration function to Controller.
type ControllerFunc func(ctx context.Context, mgr manager.Manager) error

// Register calls f.
func (f ControllerFunc) Register(ctx context.Context, mgr manager.Manager) error { return f(ctx, mgr) }

// Registerer adapts a controller whose Register takes no context (most
// reconcilers: they set up their watches and return).
func Registerer(register func(manager.Manager) error) Controller {
	return ControllerFunc(func(_ context.Context, mgr manager.Manager) error { return register(mgr) })
}

// Runnable adapts a manager Runnable (a controller with its own loop, started
// and stopped with the manager).
func Runnable(r manager.Runnable) Controller {
	return ControllerFunc(func(_ context.Context, mgr manager.Manager) error { return mgr.Add(r) })
}

// NoController registers nothing: what a provider returns for a controller
// its settings turn off.
var NoController Controller = ControllerFunc(func(context.Context, manager.Manager) error { return nil })
