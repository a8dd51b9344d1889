// Package operator builds the controller process around the controllers: options,
// JSON logging, the controller-runtime manager with Lease leader election, health
// and readiness probes, and the Prometheus registry (controller-runtime's, served on
// METRICS_PORT). It installs nothing in the cluster: CRDs come from pkg/apis/crds.
package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/karpenter-go/karpenter/pkg/apis"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// Version and Commit are set at build time (-ldflags -X); Commit falls back to
// the VCS revision Go stamps into a build made inside a git checkout.
var (
	Version = "dev"
	Commit  = ""
)

var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "karpenter", Name: "build_info",
	Help: "A metric with a constant '1' value labeled by version from which karpenter was built.",
}, []string{"version", "goversion", "goarch", "commit"})

func init() {
	crmetrics.Registry.MustRegister(buildInfo)
}

// Operator is a configured, not yet started, controller process.
type Operator struct {
	Options  *options.Options
	Manager  manager.Manager
	Client   client.Client
	Clock    clock.Clock
	Recorder record.EventRecorder
	Logger   logr.Logger
	Config   *rest.Config
}

// NewScheme registers client-go's kinds and every project API.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apis.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// New builds the manager for cfg (the cluster to manage) with the options' client
// limits, ports, leader election and logging.
func New(ctx context.Context, opts *options.Options, cfg *rest.Config) (*Operator, error) {
	logger, err := NewLogger(opts.LogLevel, opts.LogOutputPaths, opts.LogErrorOutputPaths)
	if err != nil {
		return nil, err
	}
	log.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	if opts.MemoryLimit > 0 {
		// Leave 10% for what the Go runtime does not account for.
		debug.SetMemoryLimit(opts.MemoryLimit / 10 * 9)
	}
	buildInfo.WithLabelValues(Version, strings.TrimPrefix(goVersion(), "go"), goruntime.GOARCH, commit()).Set(1)
	metrics.RegisterClientMetrics(crmetrics.Registry)

	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(opts.KubeClientQPS), opts.KubeClientBurst
	cfg.UserAgent = "karpenter/" + Version
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	// Lease renewals get their own client, so a burst of provisioning requests
	// throttled client-side cannot starve them and cost the leadership.
	leaderCfg := rest.CopyConfig(cfg)
	leaderCfg.QPS, leaderCfg.Burst = 5, 10
	OwnConnection(leaderCfg)
	metricsOpts := metricsserver.Options{BindAddress: bindAddress(opts.MetricsPort)}
	if opts.EnableProfiling {
		metricsOpts.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index),
			"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
			"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		}
	}
	leNamespace := leaderElectionNamespace(opts.LeaderElectionNamespace)
	var lock resourcelock.Interface
	if !opts.DisableLeaderElection {
		if lock, err = leaderLock(leaderCfg, leNamespace, opts.LeaderElectionName); err != nil {
			return nil, fmt.Errorf("leader election lock: %w", err)
		}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                  scheme,
		Logger:                  logger,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  bindAddress(opts.HealthProbePort),
		LeaderElection:          !opts.DisableLeaderElection,
		LeaderElectionID:        opts.LeaderElectionName,
		LeaderElectionNamespace: leNamespace,
		// nil unless POD_NAME is set: see leaderLock.
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionResourceLock:          "leases",
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionConfig:                leaderCfg,
		BaseContext:                         func() context.Context { return log.IntoContext(ctx, logger) },
		// Cached objects slimmed to what Karpenter reads (managedFields, container env and
		// probes, node images...): see informer.Transform.
		Cache: cache.Options{DefaultTransform: informer.Transform},
		// DISABLE_CONTROLLER_WARMUP=false: controllers start their watches
		// while this replica waits for the Lease, so a new leader's caches
		// are already full.
		Controller: ctrlconfig.Controller{EnableWarmup: ptr.To(ControllerWarmup(opts))},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("crds", crdCheck(mgr)); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cache", cacheCheck(mgr)); err != nil {
		return nil, err
	}
	recorder := mgr.GetEventRecorderFor("karpenter") //nolint:staticcheck // record.EventRecorder is what the controllers take
	// Objects of kinds stored but not acted on are reported at start-up.
	if err := mgr.Add(&storedObjectsReport{reader: mgr.GetAPIReader(), logger: logger, recorder: recorder, gates: opts.FeatureGates}); err != nil {
		return nil, err
	}
	return &Operator{
		Options:  opts,
		Manager:  mgr,
		Client:   mgr.GetClient(),
		Clock:    clock.RealClock{},
		Recorder: recorder,
		Logger:   logger,
		Config:   cfg,
	}, nil
}

// StartupAbandonTimeout is how long Start waits, once ctx ended, for a
// manager that had not finished starting.
const StartupAbandonTimeout = 5 * time.Second

// Start runs the manager until ctx ends.
//
// A manager stopped while it is still starting (waiting for its caches)
// never returns: controller-runtime's runnable group keeps selecting on the
// ended context instead of giving up (seen with v0.25.2: a SIGTERM within the
// first second hung the process, spinning a CPU, until SIGKILL). Nothing has
// run yet at that point (no controller, no leadership), so Start gives the
// manager StartupAbandonTimeout and then returns, and the process exits. A
// manager that finished starting shuts down gracefully as usual.
func (o *Operator) Start(ctx context.Context) error {
	o.Logger.Info("starting karpenter", "version", Version, "cloud-provider", o.Options.CloudProvider,
		"leader-election", !o.Options.DisableLeaderElection)
	started := &startedMarker{ch: make(chan struct{})}
	if err := o.Manager.Add(started); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- o.Manager.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return err
	case <-started.ch:
		return <-done
	case <-time.After(StartupAbandonTimeout):
		o.Logger.Info("stopped while starting; exiting without waiting for the manager", "waited", StartupAbandonTimeout.String())
		return nil
	}
}

// startedMarker is a runnable of the manager's last start-up group (after
// the caches synced): its start says the manager finished starting.
type startedMarker struct{ ch chan struct{} }

func (m *startedMarker) Start(ctx context.Context) error {
	close(m.ch)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection: false, so it starts on every replica, leader or not.
func (m *startedMarker) NeedLeaderElection() bool { return false }

func bindAddress(port int) string {
	if port == 0 {
		return "0" // disabled
	}
	return fmt.Sprintf(":%d", port)
}

// leaderElectionNamespace: the flag, else the namespace the pod runs in, else
// kube-system (running outside a cluster, e.g. `make run`).
func leaderElectionNamespace(ns string) string {
	if ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	if ns := os.Getenv("SYSTEM_NAMESPACE"); ns != "" {
		return ns
	}
	return "kube-system"
}

// crdCheck: ready only once the API server serves NodePools and NodeClaims.
func crdCheck(mgr manager.Manager) healthz.Checker {
	return func(*http.Request) error {
		for _, kind := range []string{"NodePool", "NodeClaim"} {
			if _, err := mgr.GetRESTMapper().RESTMapping(v1.SchemeGroupVersion.WithKind(kind).GroupKind(), v1.SchemeGroupVersion.Version); err != nil {
				return fmt.Errorf("%s not served: %w", kind, err)
			}
		}
		return nil
	}
}

// cacheCheck: ready once the informers the controllers started have synced.
func cacheCheck(mgr manager.Manager) healthz.Checker {
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced")
		}
		return nil
	}
}

// ControllerWarmup says whether controllers start their watches before this
// replica leads: with leader election, unless DISABLE_CONTROLLER_WARMUP (as
// upstream).
func ControllerWarmup(opts *options.Options) bool {
	return !opts.DisableLeaderElection && !opts.DisableControllerWarmup
}

// NewLogger returns a JSON logger at level (debug, info, error) writing every
// line to each of outputs (comma-separated: stdout, stderr or file paths,
// LOG_OUTPUT_PATHS). A line that cannot be written to one of them is reported
// on errorOutputs (same form, LOG_ERROR_OUTPUT_PATHS), as upstream's zap
// logger reports its own errors. Field names follow upstream's zap
// configuration: level, time, logger, message.
func NewLogger(level, outputs, errorOutputs string) (logr.Logger, error) {
	var lvl slog.Level
	switch level {
	case "debug":
		lvl = slog.LevelDebug
	case "info", "":
		lvl = slog.LevelInfo
	case "error":
		lvl = slog.LevelError
	default:
		return logr.Logger{}, fmt.Errorf("unknown log level %q", level)
	}
	outs, err := openSinks(outputs, os.Stdout)
	if err != nil {
		return logr.Logger{}, fmt.Errorf("log-output-paths (LOG_OUTPUT_PATHS): %w", err)
	}
	errOuts, err := openSinks(errorOutputs, os.Stderr)
	if err != nil {
		return logr.Logger{}, fmt.Errorf("log-error-output-paths (LOG_ERROR_OUTPUT_PATHS): %w", err)
	}
	w := &logSinks{outs: outs, errOut: io.MultiWriter(errOuts...), now: time.Now}
	return NewJSONLogger(w, lvl), nil
}

// openSinks opens each of the comma-separated paths: stdout, stderr or a file
// (created, appended to). None given means def.
func openSinks(paths string, def io.Writer) ([]io.Writer, error) {
	var out []io.Writer
	for _, p := range strings.Split(paths, ",") {
		switch p = strings.TrimSpace(p); p {
		case "":
		case "stdout":
			out = append(out, os.Stdout)
		case "stderr":
			out = append(out, os.Stderr)
		default:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = append(out, def)
	}
	return out, nil
}

// logSinks writes each log line to every output; a failed write is reported
// on errOut ("<time> write error: <error>", zap's form) and does not keep the
// line from the other outputs.
type logSinks struct {
	outs   []io.Writer
	errOut io.Writer
	now    func() time.Time
}

func (s *logSinks) Write(p []byte) (int, error) {
	for _, w := range s.outs {
		if _, err := w.Write(p); err != nil {
			fmt.Fprintf(s.errOut, "%s write error: %v\n", s.now().UTC().Format(time.RFC3339Nano), err)
		}
	}
	return len(p), nil
}

// NewJSONLogger writes JSON lines to w.
func NewJSONLogger(w io.Writer, lvl slog.Level) logr.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: lvl,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.MessageKey:
				a.Key = "message"
			case slog.LevelKey:
				a.Value = slog.StringValue(strings.ToUpper(a.Value.String()))
			}
			return a
		},
	})
	return logr.FromSlogHandler(h)
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return ""
}

func commit() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
