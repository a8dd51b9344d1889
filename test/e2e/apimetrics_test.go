package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiCounters are the API server's request counters for one resource, read
// from its /metrics: requests by "VERB subresource code", and the summed and
// counted request durations by "VERB subresource" (the server's own handling
// time, queueing in its handlers included, but not the client's: a client
// that waits longer than this waited on its own side or on the connection).
type apiCounters struct {
	requests    map[string]float64
	durationSum map[string]float64
	durationN   map[string]float64
}

// readAPICounters scrapes the API server's metrics for resource (e.g.
// "nodeclaims").
func readAPICounters(ctx context.Context, kube kubernetes.Interface, resource string) (apiCounters, error) {
	m, err := scrapeAPI(ctx, kube)
	if err != nil {
		return apiCounters{}, err
	}
	return m.counters(resource), nil
}

// apiMetrics is one scrape of the API server's /metrics: every sample of the
// families the benchmark reads.
type apiMetrics []apiSample

type apiSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapedFamilies are the metric names (prefixes) scrapeAPI keeps.
var scrapedFamilies = []string{
	"apiserver_request_total{", "apiserver_request_duration_seconds_sum{", "apiserver_request_duration_seconds_count{",
	"go_sched_latencies_seconds_bucket{", "etcd_request_duration_seconds_sum{", "etcd_request_duration_seconds_count{",
	"apiserver_flowcontrol_request_wait_duration_seconds_sum{", "apiserver_flowcontrol_request_wait_duration_seconds_count{",
}

func scrapeAPI(ctx context.Context, kube kubernetes.Interface) (apiMetrics, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var out apiMetrics
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, f := range scrapedFamilies {
			if strings.HasPrefix(line, f) {
				if labels, value, ok := splitSample(line); ok {
					out = append(out, apiSample{name: f[:len(f)-1], labels: labels, value: value})
				}
				break
			}
		}
	}
	return out, sc.Err()
}

// counters are the request counters and durations of one resource.
func (m apiMetrics) counters(resource string) apiCounters {
	out := apiCounters{requests: map[string]float64{}, durationSum: map[string]float64{}, durationN: map[string]float64{}}
	for _, s := range m {
		var into map[string]float64
		switch s.name {
		case "apiserver_request_total":
			into = out.requests
		case "apiserver_request_duration_seconds_sum":
			into = out.durationSum
		case "apiserver_request_duration_seconds_count":
			into = out.durationN
		default:
			continue
		}
		if s.labels["resource"] != resource {
			continue
		}
		key := s.labels["verb"] + " " + s.labels["subresource"]
		if s.labels["subresource"] == "" {
			key += "-"
		}
		if s.name == "apiserver_request_total" {
			key += " " + s.labels["code"]
		}
		into[key] += s.value
	}
	return out
}

// sum adds up the samples of name whose labels pass keep, by the key it
// returns ("" drops the sample).
func (m apiMetrics) sum(name string, key func(map[string]string) string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name != name {
			continue
		}
		if k := key(s.labels); k != "" {
			out[k] += s.value
		}
	}
	return out
}

// minus is the change of each key since an earlier sum.
func minus(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// apiLoad summarises what the API server did between two scrapes: who
// competed with Karpenter's creates (requests by resource and verb, with the
// server's mean time), how long its goroutines waited for a CPU once
// runnable (the Go runtime's scheduling latency: on two shared cores, the
// wait every step of every request pays), priority-and-fairness queueing,
// and etcd.
func apiLoad(before, after apiMetrics) string {
	var sb strings.Builder
	byResource := func(l map[string]string) string {
		if l["verb"] == "WATCH" || l["verb"] == "CONNECT" {
			return ""
		}
		r := l["resource"]
		if l["subresource"] != "" {
			r += "/" + l["subresource"]
		}
		return l["verb"] + " " + r
	}
	n := minus(after.sum("apiserver_request_duration_seconds_count", byResource), before.sum("apiserver_request_duration_seconds_count", byResource))
	d := minus(after.sum("apiserver_request_duration_seconds_sum", byResource), before.sum("apiserver_request_duration_seconds_sum", byResource))
	keys := make([]string, 0, len(n))
	total := 0.0
	for k, v := range n {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] })
	fmt.Fprintf(&sb, "API server requests over the run (not watches): %.0f; most (count, mean server time):", total)
	for i, k := range keys {
		if i == 12 {
			break
		}
		fmt.Fprintf(&sb, " %s %.0f %.0fms;", k, n[k], 1000*d[k]/n[k])
	}
	le := func(l map[string]string) string { return l["le"] }
	b := minus(after.sum("go_sched_latencies_seconds_bucket", le), before.sum("go_sched_latencies_seconds_bucket", le))
	bounds := make([]string, 0, len(b))
	for k := range b {
		bounds = append(bounds, k)
	}
	sort.Slice(bounds, func(i, j int) bool { return parseBound(bounds[i]) < parseBound(bounds[j]) })
	if len(bounds) > 0 {
		all := b["+Inf"]
		fmt.Fprintf(&sb, "\nAPI server goroutines waiting for a CPU once runnable (Go scheduling latency), %.0f wake-ups:", all)
		prev := 0.0
		for _, k := range bounds {
			if k == "+Inf" {
				fmt.Fprintf(&sb, " longer %.2f%%", 100*(all-prev)/all)
				break
			}
			fmt.Fprintf(&sb, " <=%s %.2f%%;", shortSeconds(parseBound(k)), 100*(b[k]-prev)/all)
			prev = b[k]
		}
	}
	// means writes, per value of label, the count and mean of a histogram's growth over the run.
	means := func(title, histogram, label string) {
		by := func(l map[string]string) string { return l[label] }
		n := minus(after.sum(histogram+"_count", by), before.sum(histogram+"_count", by))
		sum := minus(after.sum(histogram+"_sum", by), before.sum(histogram+"_sum", by))
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteString(title)
		for _, k := range keys {
			fmt.Fprintf(&sb, " %s %.0f %.1fms;", k, n[k], 1000*sum[k]/n[k])
		}
	}
	means("\nAPF queue wait by priority level (requests, mean):", "apiserver_flowcontrol_request_wait_duration_seconds", "priority_level")
	means("\netcd requests from the API server by operation (count, mean):", "etcd_request_duration_seconds", "operation")
	return sb.String()
}

func parseBound(s string) float64 {
	if s == "+Inf" {
		return math.Inf(1)
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

func shortSeconds(v float64) string {
	return time.Duration(v * float64(time.Second)).Round(time.Microsecond).String()
}

// splitSample parses `name{a="x",b="y"} 12` into its labels and value.
func splitSample(line string) (map[string]string, float64, bool) {
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return nil, 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	if err != nil {
		return nil, 0, false
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, val, ok := strings.Cut(kv, "=")
		if ok {
			labels[k] = strings.Trim(val, `"`)
		}
	}
	return labels, v, true
}

// since is c minus an earlier reading.
func (c apiCounters) since(before apiCounters) apiCounters {
	diff := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			if d := v - b[k]; d > 0 {
				out[k] = d
			}
		}
		return out
	}
	return apiCounters{requests: diff(c.requests, before.requests), durationSum: diff(c.durationSum, before.durationSum), durationN: diff(c.durationN, before.durationN)}
}

// conflicts is the number of 409 answers.
func (c apiCounters) conflicts() float64 {
	n := 0.0
	for k, v := range c.requests {
		if strings.HasSuffix(k, " 409") {
			n += v
		}
	}
	return n
}

// String lists the requests by verb, subresource and code, and the mean
// server-side duration by verb and subresource.
func (c apiCounters) String() string {
	keys := make([]string, 0, len(c.requests))
	for k := range c.requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s: %.0f;", strings.Join(strings.Fields(k), " "), c.requests[k])
	}
	sb.WriteString(" mean server time:")
	keys = keys[:0]
	for k := range c.durationN {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s %.0f ms;", strings.Join(strings.Fields(k), " "), 1000*c.durationSum[k]/c.durationN[k])
	}
	return sb.String()
}
