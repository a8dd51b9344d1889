// Package options holds the controller's settings. Every setting is a flag whose
// default comes from an environment variable of the same name as upstream Karpenter
// (METRICS_PORT, BATCH_IDLE_DURATION, ...), so a Helm chart or manifest written for
// upstream configures this binary unchanged. Precedence: flag, then environment,
// then the upstream default.
package options

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Options are the controller's settings. A cloud provider's own settings
// live in its package (see pkg/cloudprovider.Provider).
type Options struct {
	// CloudProvider names the provider --cloud-provider (CLOUD_PROVIDER) chose.
	// The flag belongs to the provider registry (pkg/providers),
	// which knows the names, and writes the choice here.
	CloudProvider                    string
	ClusterName                      string
	ServiceName                      string
	MetricsPort                      int
	HealthProbePort                  int
	KubeClientQPS                    int
	KubeClientBurst                  int
	EnableProfiling                  bool
	DisableControllerWarmup          bool
	DisableLeaderElection            bool
	DisableClusterStateObservability bool
	LeaderElectionName               string
	LeaderElectionNamespace          string
	MemoryLimit                      int64
	CPURequests                      int64
	LogLevel                         string
	LogOutputPaths                   string
	LogErrorOutputPaths              string
	BatchMaxDuration                 time.Duration
	BatchIdleDuration                time.Duration
	PreferencePolicy                 scheduling.PreferencePolicy
	MinValuesPolicy                  scheduling.MinValuesPolicy
	IgnoreDRARequests                bool
	// DisableRepackConsolidation turns off repack consolidation, which goes
	// beyond upstream: several underutilized nodes replaced with several
	// cheaper ones (pkg/disruption.MethodRepackConsolidation). Consolidation
	// then makes upstream Karpenter's moves only.
	DisableRepackConsolidation bool
	// LegacyNodeRepair is upstream's choice of its older node repair
	// controller, which is not built: it draws a warning, and with it no node
	// repair runs.
	LegacyNodeRepair bool
	// FeatureGates has every core gate (CoreGates) and its value.
	FeatureGates map[string]bool
	// Gates is the parsed FEATURE_GATES, with the names it did not know.
	Gates GateSet
	// SchedulerConfig is the parsed --scheduler-config (SCHEDULER_CONFIG)
	// document, nil when unset.
	SchedulerConfig *SchedulerConfiguration
	// DisableWebhook turns off the v1beta1 conversion webhook (pkg/webhook/conversion).
	DisableWebhook bool
	// WebhookPort is where the conversion webhook serves TLS.
	WebhookPort int
	// WebhookCertificate says who issues the webhook's serving certificate:
	// "self" (the controller generates it into the Secret karpenter-cert) or
	// "cert-manager" (cert-manager issues it there; the controller only reads
	// it and follows renewals). The charts' webhook.certManager.enabled.
	WebhookCertificate string
}

// Parse reads flags from args with defaults from the environment (getenv, usually
// os.Getenv). It returns the parsed options or an error naming the bad setting.
func Parse(args []string, getenv func(string) string) (*Options, error) {
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	o, finish := Register(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return o, nil
}

// Register adds the flags to fs. The returned function must be called after
// fs.Parse: it converts the string-valued settings and validates everything.
func Register(fs *flag.FlagSet, getenv func(string) string) (*Options, func() error) {
	o := &Options{}
	env := NewEnv(getenv)
	var preference, minValues, gates, schedulerConfig string
	fs.StringVar(&o.ClusterName, "cluster-name", env.String("CLUSTER_NAME", ""), "[REQUIRED for aws] Name of the cluster; tags and names instances.")
	fs.StringVar(&o.ServiceName, "karpenter-service", env.String("KARPENTER_SERVICE", ""), "The Karpenter Service name for the dynamic webhook certificate.")
	fs.IntVar(&o.MetricsPort, "metrics-port", env.Int("METRICS_PORT", 8080), "Port the Prometheus metrics endpoint binds to.")
	fs.IntVar(&o.HealthProbePort, "health-probe-port", env.Int("HEALTH_PROBE_PORT", 8081), "Port the /healthz and /readyz endpoints bind to.")
	fs.IntVar(&o.KubeClientQPS, "kube-client-qps", env.Int("KUBE_CLIENT_QPS", 200), "Maximum QPS to the Kubernetes API server.")
	fs.IntVar(&o.KubeClientBurst, "kube-client-burst", env.Int("KUBE_CLIENT_BURST", 300), "Maximum burst of requests to the Kubernetes API server.")
	fs.BoolVar(&o.EnableProfiling, "enable-profiling", env.Bool("ENABLE_PROFILING", false), "Serve pprof on the metrics port.")
	fs.BoolVar(&o.DisableControllerWarmup, "disable-controller-warmup", env.Bool("DISABLE_CONTROLLER_WARMUP", true), "Do not start controllers' watches before winning leader election (false warms their caches, so a new leader starts faster).")
	fs.BoolVar(&o.DisableLeaderElection, "disable-leader-election", env.Bool("DISABLE_LEADER_ELECTION", false), "Run without leader election (only safe with one replica).")
	fs.BoolVar(&o.DisableClusterStateObservability, "disable-cluster-state-observability", env.Bool("DISABLE_CLUSTER_STATE_OBSERVABILITY", false), "Turn off the cluster state metrics.")
	fs.StringVar(&o.LeaderElectionName, "leader-election-name", env.String("LEADER_ELECTION_NAME", "karpenter-leader-election"), "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", env.String("LEADER_ELECTION_NAMESPACE", ""), "Namespace of the leader election Lease (default: the pod's namespace, else kube-system).")
	fs.Int64Var(&o.MemoryLimit, "memory-limit", env.Int64("MEMORY_LIMIT", -1), "Memory limit of the container in bytes; GOMEMLIMIT is set to 90% of it. -1 leaves it alone.")
	fs.Int64Var(&o.CPURequests, "cpu-requests", env.Int64("CPU_REQUESTS", 1000), "CPU requests of the container in millicores; scales controller concurrency.")
	fs.StringVar(&o.LogLevel, "log-level", env.String("LOG_LEVEL", "info"), "Log verbosity: debug, info or error.")
	fs.StringVar(&o.LogOutputPaths, "log-output-paths", env.String("LOG_OUTPUT_PATHS", "stdout"), "Comma-separated log destinations (stdout, stderr or file paths); every line goes to each.")
	fs.StringVar(&o.LogErrorOutputPaths, "log-error-output-paths", env.String("LOG_ERROR_OUTPUT_PATHS", "stderr"), "Comma-separated destinations (stderr, stdout or file paths) of the logger's own errors, such as a failed write to a log output.")
	fs.DurationVar(&o.BatchMaxDuration, "batch-max-duration", env.Duration("BATCH_MAX_DURATION", 10*time.Second), "Longest a provisioning batch stays open.")
	fs.DurationVar(&o.BatchIdleDuration, "batch-idle-duration", env.Duration("BATCH_IDLE_DURATION", time.Second), "A batch closes once no pod arrived for this long.")
	fs.StringVar(&preference, "preference-policy", env.String("PREFERENCE_POLICY", string(scheduling.PreferencePolicyRespect)), "Respect or Ignore soft scheduling constraints.")
	fs.StringVar(&minValues, "min-values-policy", env.String("MIN_VALUES_POLICY", string(scheduling.MinValuesPolicyStrict)), "Strict or BestEffort treatment of requirement minValues.")
	fs.BoolVar(&o.IgnoreDRARequests, "ignore-dra-requests", env.Bool("IGNORE_DRA_REQUESTS", true), "Leave pods with Dynamic Resource Allocation requests (resource claims) pending: nothing is launched for them and disruption does not move them (true, the default). false asks for their claims to be simulated against ResourceSlices, which this build does not do yet: it refuses to start.")
	fs.BoolVar(&o.DisableRepackConsolidation, "disable-repack-consolidation", env.Bool("DISABLE_REPACK_CONSOLIDATION", false), "Consolidate with upstream Karpenter's moves only: no repack consolidation, which replaces several underutilized nodes with several new ones costing at least 5% less together when no other move is left (not an upstream setting; on by default).")
	fs.BoolVar(&o.LegacyNodeRepair, "legacy-node-repair", env.Bool("LEGACY_NODE_REPAIR", false), "With the NodeRepair feature gate, run upstream's legacy node repair controller (node.health) instead of node repair as a disruption method: it only replaces unhealthy nodes, at once and forcefully, with no budgets, reboots, terminate-first, policy priorities or drain bounds, and no karpenter.sh/do-not-repair.")
	fs.StringVar(&gates, "feature-gates", env.String("FEATURE_GATES", DefaultString(CoreGates)), "Comma-separated Gate=bool pairs: "+strings.Join(gateNames(), ", ")+". Gates not implemented yet, and unknown names, are accepted with a warning at start-up.")
	fs.BoolVar(&o.DisableWebhook, "disable-webhook", env.Bool("DISABLE_WEBHOOK", true), "Do not serve the v1beta1 conversion webhook (the charts' webhook.enabled=false).")
	fs.IntVar(&o.WebhookPort, "webhook-port", env.Int("WEBHOOK_PORT", 8443), "Port the conversion webhook serves TLS on (the Service port too).")
	fs.StringVar(&o.WebhookCertificate, "webhook-certificate", env.String("WEBHOOK_CERTIFICATE", WebhookCertificateSelf), "Who issues the conversion webhook's certificate in the Secret karpenter-cert: self or cert-manager.")
	fs.StringVar(&schedulerConfig, "scheduler-config", env.String("SCHEDULER_CONFIG", ""), "A YAML/JSON document (the value itself, not a file) with the kube-scheduler settings Karpenter mirrors: podTopologySpread.defaultConstraints, applied to pods that declare no topology spread constraints. Empty: none.")

	finish := func() error {
		// The chart passes the container's requests.cpu through the downward
		// API, which gives 0 when no CPU is requested: as upstream, a value
		// that is not positive means the default.
		if o.CPURequests <= 0 {
			o.CPURequests = 1000
		}
		o.PreferencePolicy = scheduling.PreferencePolicy(preference)
		o.MinValuesPolicy = scheduling.MinValuesPolicy(minValues)
		gs, err := ParseGateSet("feature-gates", "FEATURE_GATES", CoreGates, gates)
		o.Gates, o.FeatureGates = gs, gs.Values
		sc, scErr := ParseSchedulerConfiguration(schedulerConfig)
		if scErr != nil {
			scErr = fmt.Errorf("scheduler-config (SCHEDULER_CONFIG): %w", scErr)
		}
		o.SchedulerConfig = sc
		return errors.Join(env.Err(), err, scErr, o.Validate())
	}
	return o, finish
}

// Values of WebhookCertificate.
const (
	WebhookCertificateSelf        = "self"
	WebhookCertificateCertManager = "cert-manager"
)

// Validate checks values a flag type cannot.
func (o *Options) Validate() error {
	var errs []error
	switch o.PreferencePolicy {
	case scheduling.PreferencePolicyRespect, scheduling.PreferencePolicyIgnore:
	default:
		errs = append(errs, fmt.Errorf("preference-policy %q: must be Respect or Ignore", o.PreferencePolicy))
	}
	switch o.MinValuesPolicy {
	case scheduling.MinValuesPolicyStrict, scheduling.MinValuesPolicyBestEffort:
	default:
		errs = append(errs, fmt.Errorf("min-values-policy %q: must be Strict or BestEffort", o.MinValuesPolicy))
	}
	switch o.LogLevel {
	case "debug", "info", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: must be debug, info or error", o.LogLevel))
	}
	if o.BatchIdleDuration <= 0 || o.BatchMaxDuration <= 0 {
		errs = append(errs, fmt.Errorf("batch durations must be positive (idle %s, max %s)", o.BatchIdleDuration, o.BatchMaxDuration))
	} else if o.BatchIdleDuration > o.BatchMaxDuration {
		errs = append(errs, fmt.Errorf("batch-idle-duration %s exceeds batch-max-duration %s", o.BatchIdleDuration, o.BatchMaxDuration))
	}
	for name, port := range map[string]int{"metrics-port": o.MetricsPort, "health-probe-port": o.HealthProbePort, "webhook-port": o.WebhookPort} {
		if port < 0 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d out of range", name, port))
		}
	}
	switch o.WebhookCertificate {
	case WebhookCertificateSelf, WebhookCertificateCertManager:
	default:
		errs = append(errs, fmt.Errorf("webhook-certificate %q: must be %s or %s", o.WebhookCertificate, WebhookCertificateSelf, WebhookCertificateCertManager))
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst <= 0 {
		errs = append(errs, fmt.Errorf("kube-client-qps and kube-client-burst must be positive"))
	}
	if o.SchedulerConfig != nil {
		if err := o.SchedulerConfig.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("scheduler-config (SCHEDULER_CONFIG): %w", err))
		}
	}
	if o.CPURequests <= 0 {
		errs = append(errs, fmt.Errorf("cpu-requests must be positive"))
	}
	if !o.IgnoreDRARequests {
		// Placing such pods by their other requests would launch nodes without the
		// devices they claim, and consolidation would take them away again: refuse.
		errs = append(errs, fmt.Errorf("ignore-dra-requests (IGNORE_DRA_REQUESTS) is false, which asks for pods' Dynamic Resource Allocation claims to be simulated against ResourceSlices; this build does not simulate them yet and would launch nodes that may lack the claimed devices: set it to true (the default: such pods stay pending, with an event saying why)"))
	}
	return errors.Join(errs...)
}

// FeatureGate reports whether a gate is on.
func (o *Options) FeatureGate(name string) bool { return o.FeatureGates[name] }

// SettingWarnings are the start-up warnings of the core settings other than
// feature gates (for those see Gates.Warnings): upstream settings accepted
// for compatibility whose behaviour is not implemented yet, each named.
func (o *Options) SettingWarnings() []string {
	var out []string
	if o.LegacyNodeRepair && !o.FeatureGate(FeatureNodeRepair) {
		out = append(out, "legacy-node-repair (LEGACY_NODE_REPAIR) is true but the NodeRepair feature gate is off: as upstream's, no node repair runs (the legacy controller runs only with the gate)")
	}
	return out
}

// CPUConcurrency is upstream's linear scaling of a controller's concurrency with
// the CPU it was given: one worker per core at the bottom of the range.
func (o *Options) CPUConcurrency(min, max int) int {
	n := int((o.CPURequests + 999) / 1000)
	if n < min {
		return min
	}
	if n > max {
		return max
	}
	return n
}
