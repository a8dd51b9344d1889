package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	out := apiCounters{requests: map[string]float64{}, durationSum: map[string]float64{}, durationN: map[string]float64{}}
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out, err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			into = out.requests
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_sum{"):
			into = out.durationSum
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_count{"):
			into = out.durationN
		default:
			continue
		}
		labels, value, ok := splitSample(line)
		if !ok || labels["resource"] != resource {
			continue
		}
		key := labels["verb"] + " " + labels["subresource"]
		if labels["subresource"] == "" {
			key += "-"
		}
		if strings.HasPrefix(line, "apiserver_request_total{") {
			key += " " + labels["code"]
		}
		into[key] += value
	}
	return out, sc.Err()
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
