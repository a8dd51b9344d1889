package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// karpenterFamilies reads Karpenter's /metrics: each family that has at least
// one series, with the label names its series carry (histogram and summary
// series without their le and quantile).
func karpenterFamilies(t testing.TB, e *provisioningEnv) map[string]map[string]bool {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", e.karpenter.MetricsPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	types := map[string]string{}
	out := map[string]map[string]bool{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<22)
	for s.Scan() {
		line := s.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && (types[base] == "histogram" || types[base] == "summary") {
				name = base
			}
		}
		labels := out[name]
		if labels == nil {
			labels = map[string]bool{}
			out[name] = labels
		}
		if strings.HasPrefix(rest, "{") {
			body := rest[1:strings.LastIndexByte(rest, '}')]
			for _, pair := range splitLabels(body) {
				if k, _, ok := strings.Cut(pair, "="); ok && k != "le" && k != "quantile" {
					labels[k] = true
				}
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(body string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, body[start:i])
				start = i + 1
			}
		}
	}
	if start < len(body) {
		out = append(out, body[start:])
	}
	return out
}

// expectUpstreamMetricFamilies scrapes Karpenter after a provisioning,
// consolidation and termination run and compares every family it emitted
// that upstream v1.15 also has with upstream's label names (the list
// generated from upstream's source, pkg/metrics/parity/testdata): the labels
// must be upstream's, plus, for the families upstream labels with node
// labels, well-known node labels. It logs the table and fails on a
// difference, or when fewer than min upstream families were emitted at all.
func expectUpstreamMetricFamilies(t *testing.T, e *provisioningEnv, min int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "pkg", "metrics", "parity", "testdata", "upstream_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream []struct {
		Name    string   `json:"name"`
		Labels  []string `json:"labels"`
		Dynamic string   `json:"dynamic"`
	}
	if err := json.Unmarshal(raw, &upstream); err != nil {
		t.Fatal(err)
	}
	scraped := karpenterFamilies(t, e)
	var table strings.Builder
	emitted := 0
	for _, u := range upstream {
		got, ok := scraped[u.Name]
		if !ok {
			fmt.Fprintf(&table, "%-68s | not emitted in this run\n", u.Name)
			continue
		}
		emitted++
		var missing, extra []string
		want := map[string]bool{}
		for _, l := range u.Labels {
			// The list is upstream's AWS provider's: its NodeClass label is
			// the KWOK provider's here, as upstream's KWOK provider has it.
			if l == "karpenter_k8s_aws_ec2nodeclass" {
				l = "karpenter_kwok_sh_kwoknodeclass"
			}
			want[l] = true
			if !got[l] {
				missing = append(missing, l)
			}
		}
		for l := range got {
			if !want[l] && u.Dynamic == "" {
				extra = append(extra, l)
			}
		}
		sort.Strings(extra)
		status := "same"
		if len(missing)+len(extra) > 0 {
			status = fmt.Sprintf("DIFFERS: missing %v, extra %v", missing, extra)
			t.Errorf("%s: labels differ from upstream's %v: missing %v, extra %v", u.Name, u.Labels, missing, extra)
		}
		fmt.Fprintf(&table, "%-68s | emitted | %s\n", u.Name, status)
	}
	t.Logf("upstream metric families on /metrics after provisioning, consolidation and termination (%d of %d emitted):\n%s", emitted, len(upstream), table.String())
	if emitted < min {
		t.Errorf("only %d upstream families emitted, want at least %d", emitted, min)
	}
}
