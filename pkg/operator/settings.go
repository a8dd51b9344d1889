package operator

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

// FeatureGateEnabled is karpenter_feature_gate_enabled, this implementation's
// own: 1 for each known feature gate that is enabled, 0 for each that is not,
// labelled by the gate's name and by whether this implementation acts on it
// (implemented "true" or "false"). Core gates (FEATURE_GATES) and the cloud
// provider's (e.g. AWS_FEATURE_GATES) alike. Alert on
// karpenter_feature_gate_enabled{implemented="false"} == 1 to find a gate an
// upstream configuration turns on that does nothing here.
var FeatureGateEnabled = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "karpenter", Name: "feature_gate_enabled",
	Help: "Whether a feature gate is enabled (1) or not (0), by gate name and whether this implementation acts on it (implemented).",
}, []string{"name", "implemented"})

func init() {
	crmetrics.Registry.MustRegister(FeatureGateEnabled)
}

// ReportSettings runs once at start-up: it sets karpenter_feature_gate_enabled
// for every gate of gates, and logs each of warnings (gates enabled but not
// implemented, unknown gate names, settings accepted but not acted on: see
// options.GateSet.Warnings and options.Options.SettingWarnings) as a warning,
// each message once.
func ReportSettings(logger logr.Logger, gates []options.GateState, warnings []string) {
	FeatureGateEnabled.Reset()
	for _, g := range gates {
		v := 0.0
		if g.Enabled {
			v = 1
		}
		FeatureGateEnabled.WithLabelValues(g.Name, strconv.FormatBool(g.Implemented)).Set(v)
	}
	warn := slog.New(logr.ToSlogHandler(logger))
	seen := map[string]bool{}
	for _, w := range warnings {
		if seen[w] {
			continue
		}
		seen[w] = true
		warn.Log(context.Background(), slog.LevelWarn, w)
	}
}
