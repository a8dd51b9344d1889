package options

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

// upstreamChartFeatureGates is FEATURE_GATES as upstream's v1.15 chart
// (charts/karpenter/templates/deployment.yaml) renders it with its default
// values: every gate it knows, always.
const upstreamChartFeatureGates = "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false"

func TestUpstreamChartFeatureGatesParse(t *testing.T) {
	o, err := Parse(nil, env(map[string]string{"FEATURE_GATES": upstreamChartFeatureGates}))
	if err != nil {
		t.Fatalf("upstream's chart default FEATURE_GATES is refused: %v", err)
	}
	if !reflect.DeepEqual(o.FeatureGates, DefaultFeatureGates()) {
		t.Errorf("gates %v, want the defaults %v", o.FeatureGates, DefaultFeatureGates())
	}
	if len(o.Gates.Unknown) != 0 || len(o.Gates.Warnings()) != 0 {
		t.Errorf("unknown %v, warnings %v: want none for upstream's defaults", o.Gates.Unknown, o.Gates.Warnings())
	}
	// The default value is the same string, gate for gate.
	if DefaultString(CoreGates) != upstreamChartFeatureGates {
		t.Errorf("default FEATURE_GATES %q, want upstream's %q", DefaultString(CoreGates), upstreamChartFeatureGates)
	}
}

func TestEveryUpstreamGateIsKnownWithUpstreamsDefault(t *testing.T) {
	// Upstream v1.15 pkg/operator/options: KarpenterFeatureGates.
	want := map[string]bool{
		"NodeRepair": false, "ReservedCapacity": true, "SpotToSpotConsolidation": false, "NodeOverlay": false,
		"StaticCapacity": false, "CapacityBuffer": false, "TerminateFirstDrift": false, "TerminateFirstRepair": false,
		"PodDeletionCostManagement": false,
	}
	if got := DefaultFeatureGates(); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %v, want %v", got, want)
	}
	for name := range want {
		o, err := Parse(nil, env(map[string]string{"FEATURE_GATES": name + "=" + map[bool]string{true: "false", false: "true"}[want[name]]}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.FeatureGate(name) == want[name] {
			t.Errorf("%s not switched from its default", name)
		}
	}
}

// An unknown gate is ignored, as upstream ignores it, and warned about once
// by name; it does not stop start-up.
func TestUnknownGatesAreWarnedNotRefused(t *testing.T) {
	o, err := Parse(nil, env(map[string]string{"FEATURE_GATES": " Teleport=true , NodeRepair=true,Teleport=false,Drift=false"}))
	if err != nil {
		t.Fatalf("unknown gates refused: %v", err)
	}
	if !reflect.DeepEqual(o.Gates.Unknown, []string{"Teleport", "Drift"}) {
		t.Errorf("unknown %v, want [Teleport Drift]", o.Gates.Unknown)
	}
	if !o.FeatureGate(FeatureNodeRepair) {
		t.Error("a known gate next to unknown ones was not applied")
	}
	var unknown []string
	for _, w := range o.Gates.Warnings() {
		if strings.Contains(w, "is unknown") {
			unknown = append(unknown, w)
		}
	}
	if len(unknown) != 2 || !strings.Contains(unknown[0], "Teleport (FEATURE_GATES) is unknown") || !strings.Contains(unknown[1], "Drift (FEATURE_GATES) is unknown") {
		t.Errorf("warnings %q", unknown)
	}
}

func TestEnabledGatesNotImplementedAreWarnedOnceEach(t *testing.T) {
	// Every core gate is implemented: enabling them all warns about nothing.
	all := []string{}
	for _, g := range CoreGates {
		all = append(all, g.Name+"=true")
	}
	o, err := Parse(nil, env(map[string]string{"FEATURE_GATES": strings.Join(all, ",")}))
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Gates.Warnings(); len(w) != 0 {
		t.Errorf("every core gate enabled warns: %q", w)
	}
	// The defaults warn about nothing either.
	d, _ := Parse(nil, env(nil))
	if w := d.Gates.Warnings(); len(w) != 0 {
		t.Errorf("defaults warn: %q", w)
	}
	// A gate that is not implemented is warned about once, when enabled.
	gates := []Gate{{Name: "Built", Implemented: true}, {Name: "Unbuilt", Missing: "nothing happens"}}
	set, err := ParseGateSet("feature-gates", "FEATURE_GATES", gates, "Built=true,Unbuilt=true")
	if err != nil {
		t.Fatal(err)
	}
	w := set.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "Unbuilt") || !strings.Contains(w[0], "not implemented yet: nothing happens") || !strings.Contains(w[0], "FEATURE_GATES") {
		t.Errorf("warnings %q, want one for Unbuilt", w)
	}
	if set, _ = ParseGateSet("feature-gates", "FEATURE_GATES", gates, "Unbuilt=false"); len(set.Warnings()) != 0 {
		t.Errorf("a disabled unbuilt gate warns: %q", set.Warnings())
	}
}

func TestSettingWarnings(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		want []string
	}{
		"defaults":                            {want: nil},
		"legacy node repair without the gate": {env: map[string]string{"LEGACY_NODE_REPAIR": "true"}, want: []string{"legacy-node-repair (LEGACY_NODE_REPAIR) is true but the NodeRepair feature gate is off"}},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(nil, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			got := o.SettingWarnings()
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", got, len(tc.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("warning %q, want it to contain %q", got[i], tc.want[i])
				}
			}
		})
	}
}

// Every flag and environment variable of upstream v1.15's core options
// (sigs.k8s.io/karpenter pkg/operator/options/options.go, Options.AddFlags)
// is registered here, under the same names.
func TestEveryUpstreamCoreFlagAndVariableIsRegistered(t *testing.T) {
	upstream := map[string]string{ // flag: environment variable
		"karpenter-service":                   "KARPENTER_SERVICE",
		"metrics-port":                        "METRICS_PORT",
		"health-probe-port":                   "HEALTH_PROBE_PORT",
		"kube-client-qps":                     "KUBE_CLIENT_QPS",
		"kube-client-burst":                   "KUBE_CLIENT_BURST",
		"enable-profiling":                    "ENABLE_PROFILING",
		"disable-controller-warmup":           "DISABLE_CONTROLLER_WARMUP",
		"disable-leader-election":             "DISABLE_LEADER_ELECTION",
		"disable-cluster-state-observability": "DISABLE_CLUSTER_STATE_OBSERVABILITY",
		"leader-election-name":                "LEADER_ELECTION_NAME",
		"leader-election-namespace":           "LEADER_ELECTION_NAMESPACE",
		"memory-limit":                        "MEMORY_LIMIT",
		"cpu-requests":                        "CPU_REQUESTS",
		"log-level":                           "LOG_LEVEL",
		"log-output-paths":                    "LOG_OUTPUT_PATHS",
		"log-error-output-paths":              "LOG_ERROR_OUTPUT_PATHS",
		"batch-max-duration":                  "BATCH_MAX_DURATION",
		"batch-idle-duration":                 "BATCH_IDLE_DURATION",
		"preference-policy":                   "PREFERENCE_POLICY",
		"min-values-policy":                   "MIN_VALUES_POLICY",
		"ignore-dra-requests":                 "IGNORE_DRA_REQUESTS",
		"legacy-node-repair":                  "LEGACY_NODE_REPAIR",
		"feature-gates":                       "FEATURE_GATES",
		"scheduler-config":                    "SCHEDULER_CONFIG",
	}
	read := map[string]bool{}
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	Register(fs, func(name string) string { read[name] = true; return "" })
	for f, e := range upstream {
		if fs.Lookup(f) == nil {
			t.Errorf("upstream flag --%s is not registered", f)
		}
		if !read[e] {
			t.Errorf("upstream environment variable %s (--%s) is not read", e, f)
		}
	}
}

func TestFeatureGateValue(t *testing.T) {
	if !FeatureGateValue(nil, FeatureReservedCapacity) || FeatureGateValue(nil, FeatureNodeRepair) {
		t.Error("without gates, want upstream's defaults (ReservedCapacity on, NodeRepair off)")
	}
	if FeatureGateValue(map[string]bool{FeatureReservedCapacity: false}, FeatureReservedCapacity) {
		t.Error("ReservedCapacity=false not read")
	}
}
