package scheduling_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// TestBenchmarkWorkloadsUnchanged pins the solver's results on the benchmark workloads (the
// ones hack/bench-vs-upstream.sh compares with upstream): node count, total price and a
// fingerprint of every claim (its pods, requirements and instance types). Speed-ups must not
// move them; a deliberate change of results updates the table (GOLDEN_PRINT=1 prints it).
func TestBenchmarkWorkloadsUnchanged(t *testing.T) {
	cases := []struct {
		name   string
		pods   []*corev1.Pod
		policy scheduling.PreferencePolicy
		nodes  int
		price  string
		sum    string
	}{
		{"diverse-1000", fake.DiversePods(1000), scheduling.PreferencePolicyRespect, 200, "272.1000", "d9f0fbc68e66c67e"},
		{"diverse-2000", fake.DiversePods(2000), scheduling.PreferencePolicyRespect, 400, "603.0000", "8014ca66e53a8b3a"},
		{"preferences-respect-500", fake.PreferencePods(500), scheduling.PreferencePolicyRespect, 500, "263.4000", "eeb225654cc3f81c"},
		{"preferences-ignore-4000", fake.PreferencePods(4000), scheduling.PreferencePolicyIgnore, 9, "1073.7000", "0169d842237f7e8d"},
	}
	for _, c := range cases {
		res := scheduling.Solve(&scheduling.Input{Pods: c.pods, NodePools: []*scheduling.NodePool{fake.BenchNodePool()},
			Options: scheduling.Options{PreferencePolicy: c.policy}})
		if len(res.PodErrors) > 0 {
			t.Errorf("%s: %d pods unplaced", c.name, len(res.PodErrors))
		}
		price := fmt.Sprintf("%.4f", res.TotalPrice())
		sum := resultsFingerprint(res)
		if os.Getenv("GOLDEN_PRINT") != "" {
			fmt.Printf("{%q, ..., %d, %q, %q},\n", c.name, len(res.NewClaims), price, sum)
			continue
		}
		if len(res.NewClaims) != c.nodes || price != c.price || sum != c.sum {
			t.Errorf("%s: got %d nodes, $%s/h, fingerprint %s; want %d nodes, $%s/h, fingerprint %s",
				c.name, len(res.NewClaims), price, sum, c.nodes, c.price, c.sum)
		}
	}
}

func resultsFingerprint(res *scheduling.Results) string {
	h := sha256.New()
	for _, c := range res.NewClaims {
		names := make([]string, 0, len(c.Pods))
		for _, p := range c.Pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		its := make([]string, 0, len(c.InstanceTypes))
		for _, it := range c.InstanceTypes {
			its = append(its, it.Name)
		}
		fmt.Fprintf(h, "%s|%s|%s|%.4f\n", strings.Join(names, ","), c.Requirements.String(), strings.Join(its, ","), c.Price)
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}
