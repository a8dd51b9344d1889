package parity

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clock "k8s.io/utils/clock/testing"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	_ "github.com/karpenter-go/karpenter/pkg/controllers"
	_ "github.com/karpenter-go/karpenter/pkg/controllers/deletioncost"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/conditions"
	nodemetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/node"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/nodepoolcost"
	podmetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/pod"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	_ "github.com/karpenter-go/karpenter/pkg/operator"
	_ "github.com/karpenter-go/karpenter/pkg/providers"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// upstreamFamily is one entry of testdata/upstream_metrics.json.
type upstreamFamily struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Labels  []string `json:"labels"`
	Dynamic string   `json:"dynamic"`
	Source  string   `json:"source"`
	Gate    string   `json:"gate"`
}

// notBuilt lists upstream families whose feature this controller does not
// have; each names the missing feature. Every other upstream family must be
// registered with upstream's label names.
var notBuilt = map[string]string{}

// pending lists upstream families whose feature exists here but which are
// not exported yet, each with what is missing. They are reported in the table
// as PENDING; the list is meant to shrink to nothing.
var pending = map[string]string{}

// variableLabels reads a descriptor's variable label names from its String
// form (Desc keeps them private).
var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]*)", .*variableLabels: \{([^}]*)\}\}$`)

// ourFamilies describes every collector the binary registers: the package
// level ones (registered on controller-runtime's registry at init) and the
// metrics controllers' (built here on a fresh registry, as the binary builds
// them with the AWS provider's labels).
func ourFamilies(t *testing.T) map[string][]string {
	t.Helper()
	reg := prometheus.NewRegistry()
	clk := clock.NewFakeClock(time.Unix(0, 0))
	if _, err := nodemetrics.NewController(state.NewCluster(clk, nil), clk, reg, awsv1.WellKnownLabels...); err != nil {
		t.Fatal(err)
	}
	if _, err := podmetrics.NewController(nil, clk, reg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := nodepoolcost.New(state.NewCluster(clk, nil), nil, reg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []conditions.Kind{conditions.NodeClaimKind(aws.NodeClassLabelKey), conditions.NodePoolKind(), conditions.NodeKind(aws.NodeClassLabelKey),
		conditions.NodeClassKind(&awsv1.EC2NodeClass{}, awsv1.Group, "EC2NodeClass"), conditions.CapacityBufferKind()} {
		if _, err := conditions.NewController(nil, clk, reg, k); err != nil {
			t.Fatal(err)
		}
	}
	metrics.RegisterClientMetrics(crmetrics.Registry) // as operator.New does
	out := map[string][]string{}
	for _, c := range []prometheus.Collector{reg, crmetrics.Registry.(prometheus.Collector)} {
		ch := make(chan *prometheus.Desc, 1024)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("unparsable descriptor %s", d)
			}
			labels := []string{}
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
			}
			out[m[1]] = labels
		}
	}
	return out
}

// TestUpstreamMetricFamilies compares family names and label names with
// upstream's and prints the table.
func TestUpstreamMetricFamilies(t *testing.T) {
	b, err := os.ReadFile("testdata/upstream_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var upstream []upstreamFamily
	if err := json.Unmarshal(b, &upstream); err != nil {
		t.Fatal(err)
	}
	ours := ourFamilies(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-68s | %-60s | %-60s | %s\n", "family", "upstream labels", "ours", "status")
	var failures []string
	counts := map[string]int{}
	for _, u := range upstream {
		got, present := ours[u.Name]
		status := "same"
		switch {
		case !present && notBuilt[u.Name] != "":
			status = "not built: " + notBuilt[u.Name]
		case !present:
			status = "MISSING"
		case u.Dynamic != "":
			// the static part must be there; the rest are the well-known node
			// labels, which the provider registers
			if missing := minus(u.Labels, got); len(missing) > 0 {
				status = "LABELS −" + strings.Join(missing, " −")
			} else {
				status = "same (+ " + u.Dynamic + ")"
			}
		default:
			if missing, extra := minus(u.Labels, got), minus(got, u.Labels); len(missing)+len(extra) > 0 {
				status = "LABELS"
				for _, m := range missing {
					status += " −" + m
				}
				for _, e := range extra {
					status += " +" + e
				}
			}
		}
		oursText := strings.Join(got, ",")
		if !present {
			oursText = "—"
		}
		if u.Dynamic != "" {
			oursText = fmt.Sprintf("%d labels", len(got))
		}
		if status == "MISSING" || strings.HasPrefix(status, "LABELS") {
			if why, ok := pending[u.Name]; ok {
				status = "PENDING (" + why + "): " + status
			} else {
				failures = append(failures, u.Name+": "+status)
			}
		}
		counts[strings.Fields(status)[0]]++
		fmt.Fprintf(&table, "%-68s | %-60s | %-60s | %s\n", u.Name, strings.Join(u.Labels, ","), oursText, status)
	}
	t.Logf("metric families, upstream vs ours:\n%s\n%d upstream families; %v", table.String(), len(upstream), counts)
	for name := range notBuilt {
		if _, ok := ours[name]; ok {
			failures = append(failures, name+": registered, but listed as not built")
		}
	}
	for name := range pending {
		if u, ok := find(upstream, name); !ok {
			failures = append(failures, name+": listed as pending, but not an upstream family")
		} else if got, ok := ours[name]; ok && len(minus(u.Labels, got))+len(minus(got, u.Labels)) == 0 {
			failures = append(failures, name+": exported as upstream does, drop it from pending")
		}
	}
	sort.Strings(failures)
	for _, f := range failures {
		t.Error(f)
	}
}

func find(fams []upstreamFamily, name string) (upstreamFamily, bool) {
	for _, f := range fams {
		if f.Name == name {
			return f, true
		}
	}
	return upstreamFamily{}, false
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
