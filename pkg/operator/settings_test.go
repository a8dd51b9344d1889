package operator_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// Each enabled gate that is not implemented (here a provider gate: every core
// gate is built), and each unknown one, is logged once as a warning naming it; every known gate is exposed as
// karpenter_feature_gate_enabled{name, implemented}.
func TestReportSettingsWarnsOnceAndExposesGates(t *testing.T) {
	core, err := options.ParseGateSet("feature-gates", "FEATURE_GATES", options.CoreGates,
		"NodeRepair=true,SpotToSpotConsolidation=true,ReservedCapacity=false,TerminateFirstDrift=true,CapacityBuffer=true,Teleport=true")
	if err != nil {
		t.Fatal(err)
	}
	provider, err := options.ParseGateSet("aws-feature-gates", "AWS_FEATURE_GATES",
		[]options.Gate{{Name: "RebootForRepair", Missing: "no repair"}, {Name: "NodeClassCEL", Missing: "no CEL"}}, "RebootForRepair=true")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logger := operator.NewJSONLogger(&buf, 0)
	settingWarning := "enable-zonal-shift (ENABLE_ZONAL_SHIFT) is true but not implemented yet"
	// The same warning twice (e.g. from two sources) is still logged once.
	gates := append(core.States(), provider.States()...)
	warnings := append(append(core.Warnings(), provider.Warnings()...), settingWarning, settingWarning)
	operator.ReportSettings(logger, gates, warnings)

	counts := map[string]int{}
	for _, m := range logLines(t, &buf) {
		if m["level"] != "WARN" {
			t.Errorf("level %v, want WARN: %v", m["level"], m)
		}
		msg, _ := m["message"].(string)
		for _, name := range []string{"NodeRepair", "TerminateFirstDrift", "Teleport", "RebootForRepair", "ENABLE_ZONAL_SHIFT", "SpotToSpotConsolidation", "ReservedCapacity", "NodeClassCEL", "CapacityBuffer"} {
			if strings.Contains(msg, name+" ") || strings.Contains(msg, "("+name+")") {
				counts[name]++
			}
		}
	}
	want := map[string]int{"NodeRepair": 0, "TerminateFirstDrift": 0, "Teleport": 1, "RebootForRepair": 1, "ENABLE_ZONAL_SHIFT": 1}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("%s warned %d times, want %d\n%s", name, counts[name], n, buf.String())
		}
	}
	for _, name := range []string{"SpotToSpotConsolidation", "ReservedCapacity", "NodeClassCEL", "CapacityBuffer", "TerminateFirstDrift"} {
		if counts[name] != 0 {
			t.Errorf("%s (implemented, or not enabled) warned about:\n%s", name, buf.String())
		}
	}
	if n := len(logLines(t, &buf)); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, buf.String())
	}

	for _, c := range []struct {
		name, implemented string
		want              float64
	}{
		{"NodeRepair", "true", 1},
		{"CapacityBuffer", "true", 1},
		{"NodeOverlay", "true", 0},
		{"TerminateFirstDrift", "true", 1},
		{"TerminateFirstRepair", "true", 0},
		{"PodDeletionCostManagement", "true", 0},
		{"SpotToSpotConsolidation", "true", 1},
		{"ReservedCapacity", "true", 0},
		{"RebootForRepair", "false", 1},
		{"NodeClassCEL", "false", 0},
	} {
		if got := testutil.ToFloat64(operator.FeatureGateEnabled.WithLabelValues(c.name, c.implemented)); got != c.want {
			t.Errorf("karpenter_feature_gate_enabled{name=%q,implemented=%q} = %v, want %v", c.name, c.implemented, got, c.want)
		}
	}
	// Known gates only (9 core, 2 provider): an unknown name is a warning, not a series.
	if n := testutil.CollectAndCount(operator.FeatureGateEnabled); n != len(options.CoreGates)+2 {
		t.Errorf("%d series, want %d", n, len(options.CoreGates)+2)
	}
}

// LOG_OUTPUT_PATHS: every line goes to each output; LOG_ERROR_OUTPUT_PATHS:
// a line that cannot be written is reported there, as zap reports its own
// errors upstream.
func TestLogOutputAndErrorOutputPaths(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fail writes")
	}
	dir := t.TempDir()
	a, b, errs := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), filepath.Join(dir, "errors.log")
	l, err := operator.NewLogger("info", a+",/dev/full, "+b, errs)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hello", "k", "v")
	for _, p := range []string{a, b} {
		got, _ := os.ReadFile(p)
		if !strings.Contains(string(got), `"message":"hello"`) {
			t.Errorf("%s: %q, want the line", p, got)
		}
	}
	got, _ := os.ReadFile(errs)
	if !strings.Contains(string(got), "write error:") || strings.Count(string(got), "\n") != 1 {
		t.Errorf("error output %q, want one write error", got)
	}
	if _, err := operator.NewLogger("info", "stdout", filepath.Join(dir, "missing", "x.log")); err == nil || !strings.Contains(err.Error(), "LOG_ERROR_OUTPUT_PATHS") {
		t.Errorf("unopenable error output: %v, want an error naming LOG_ERROR_OUTPUT_PATHS", err)
	}
}

// DISABLE_CONTROLLER_WARMUP=false starts controllers' watches before the
// Lease is won; it means nothing without leader election.
func TestControllerWarmup(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--disable-controller-warmup=false"}, true},
		{[]string{"--disable-controller-warmup=false", "--disable-leader-election"}, false},
	} {
		o, err := options.Parse(c.args, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if got := operator.ControllerWarmup(o); got != c.want {
			t.Errorf("%v: warmup %v, want %v", c.args, got, c.want)
		}
	}
}
