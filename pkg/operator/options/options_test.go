package options

import (
	"strings"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsAreUpstreams(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]any{
		"metrics-port":              {o.MetricsPort, 8080},
		"health-probe-port":         {o.HealthProbePort, 8081},
		"kube-client-qps":           {o.KubeClientQPS, 200},
		"kube-client-burst":         {o.KubeClientBurst, 300},
		"batch-idle-duration":       {o.BatchIdleDuration, time.Second},
		"batch-max-duration":        {o.BatchMaxDuration, 10 * time.Second},
		"leader-election-name":      {o.LeaderElectionName, "karpenter-leader-election"},
		"disable-leader-election":   {o.DisableLeaderElection, false},
		"log-level":                 {o.LogLevel, "info"},
		"preference-policy":         {o.PreferencePolicy, scheduling.PreferencePolicyRespect},
		"min-values-policy":         {o.MinValuesPolicy, scheduling.MinValuesPolicyStrict},
		"memory-limit":              {o.MemoryLimit, int64(-1)},
		"cpu-requests":              {o.CPURequests, int64(1000)},
		"ignore-dra-requests":       {o.IgnoreDRARequests, true},
		"disable-controller-warmup": {o.DisableControllerWarmup, true},
		"webhook-certificate":       {o.WebhookCertificate, "self"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	want := map[string]bool{"NodeRepair": false, "ReservedCapacity": true, "SpotToSpotConsolidation": false, "NodeOverlay": false, "StaticCapacity": false, "CapacityBuffer": false,
		"TerminateFirstDrift": false, "TerminateFirstRepair": false, "PodDeletionCostManagement": false}
	if len(o.FeatureGates) != len(want) {
		t.Errorf("gates %v, want exactly %v", o.FeatureGates, want)
	}
	if o.LegacyNodeRepair || o.LogErrorOutputPaths != "stderr" || o.LogOutputPaths != "stdout" {
		t.Errorf("legacy-node-repair %v, log outputs %q %q", o.LegacyNodeRepair, o.LogOutputPaths, o.LogErrorOutputPaths)
	}
	for k, v := range want {
		if o.FeatureGates[k] != v {
			t.Errorf("gate %s = %v, want %v", k, o.FeatureGates[k], v)
		}
	}
}

func TestEnvironmentThenFlagPrecedence(t *testing.T) {
	e := env(map[string]string{
		"BATCH_IDLE_DURATION":       "2s",
		"BATCH_MAX_DURATION":        "20s",
		"METRICS_PORT":              "9000",
		"DISABLE_LEADER_ELECTION":   "true",
		"FEATURE_GATES":             "NodeRepair=true,ReservedCapacity=false",
		"PREFERENCE_POLICY":         "Ignore",
		"CLUSTER_NAME":              "demo",
		"LEADER_ELECTION_NAMESPACE": "karpenter",
	})
	o, err := Parse([]string{"--metrics-port=9100", "--batch-idle-duration=500ms"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if o.MetricsPort != 9100 || o.BatchIdleDuration != 500*time.Millisecond {
		t.Errorf("flags must win over env: metrics %d idle %s", o.MetricsPort, o.BatchIdleDuration)
	}
	if o.BatchMaxDuration != 20*time.Second || !o.DisableLeaderElection || o.ClusterName != "demo" || o.LeaderElectionNamespace != "karpenter" {
		t.Errorf("env not applied: %+v", o)
	}
	if !o.FeatureGate(FeatureNodeRepair) || o.FeatureGate(FeatureReservedCapacity) || o.FeatureGate(FeatureCapacityBuffer) {
		t.Errorf("feature gates: %v", o.FeatureGates)
	}
	if o.PreferencePolicy != scheduling.PreferencePolicyIgnore {
		t.Errorf("preference policy %q", o.PreferencePolicy)
	}
}

func TestInvalidSettingsAreRejected(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"bad duration":     {env: map[string]string{"BATCH_IDLE_DURATION": "soon"}, want: "BATCH_IDLE_DURATION"},
		"idle above max":   {args: []string{"--batch-idle-duration=11s"}, want: "exceeds"},
		"gate not bool":    {env: map[string]string{"FEATURE_GATES": "NodeRepair=maybe"}, want: "not a boolean"},
		"gate without =":   {env: map[string]string{"FEATURE_GATES": "NodeRepair"}, want: "feature-gates (FEATURE_GATES): \"NodeRepair\" is not Gate=bool"},
		"bad policy":       {env: map[string]string{"MIN_VALUES_POLICY": "Loose"}, want: "min-values-policy"},
		"bad log level":    {env: map[string]string{"LOG_LEVEL": "chatty"}, want: "log-level"},
		"bad port":         {env: map[string]string{"METRICS_PORT": "eighty"}, want: "METRICS_PORT"},
		"scheduler config": {env: map[string]string{"SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 0}]}"}, want: "SCHEDULER_CONFIG"},
		"bad cert issuer":  {env: map[string]string{"WEBHOOK_CERTIFICATE": "vault"}, want: "webhook-certificate \"vault\": must be self or cert-manager"},
		"dra simulation":   {env: map[string]string{"IGNORE_DRA_REQUESTS": "false"}, want: "IGNORE_DRA_REQUESTS) is false, which asks for pods' Dynamic Resource Allocation claims to be simulated"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.args, env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestCPUConcurrency(t *testing.T) {
	o := &Options{CPURequests: 2500}
	if got := o.CPUConcurrency(1, 100); got != 3 {
		t.Errorf("2500m → %d workers, want 3", got)
	}
	if got := o.CPUConcurrency(10, 100); got != 10 {
		t.Errorf("floor not applied: %d", got)
	}
}

// TestEnvNamesEveryBadVariable: a provider's settings read the environment
// through the same Env, so each bad value is reported, by its variable.
func TestEnvNamesEveryBadVariable(t *testing.T) {
	e := NewEnv(env(map[string]string{"A": "x", "B": "1.5", "C": "maybe", "D": "soon", "E": "0.075"}))
	if got := e.Int("A", 3); got != 3 {
		t.Errorf("bad int: %d, want the default", got)
	}
	e.Int64("B", 0)
	e.Bool("C", false)
	e.Duration("D", 0)
	if got := e.Float64("E", 0); got != 0.075 {
		t.Errorf("float %v, want 0.075", got)
	}
	if got := e.String("UNSET", "def"); got != "def" {
		t.Errorf("unset string %q, want the default", got)
	}
	for _, want := range []string{`A="x" is not an integer`, `B="1.5" is not an integer`, `C="maybe" is not a boolean`, `D="soon" is not a duration`} {
		if err := e.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %s", err, want)
		}
	}
	if NewEnv(env(nil)).Err() != nil {
		t.Error("no variables, no error")
	}
}

// CPU_REQUESTS comes from the downward API's requests.cpu, 0 when the
// container requests no CPU: like upstream, that means the default.
func TestNonPositiveCPURequestsMeanTheDefault(t *testing.T) {
	for _, v := range []string{"0", "-5"} {
		o, err := Parse(nil, env(map[string]string{"CPU_REQUESTS": v}))
		if err != nil {
			t.Fatalf("CPU_REQUESTS=%s: %v", v, err)
		}
		if o.CPURequests != 1000 {
			t.Errorf("CPU_REQUESTS=%s: cpu-requests %d, want the default 1000", v, o.CPURequests)
		}
	}
}
