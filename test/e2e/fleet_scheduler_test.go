package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// schedulerMetrics is what kube-scheduler reports of its own work: attempts by result and
// the time it spent per extension point. A fleet benchmark prints their difference over a
// phase, so that "kube-scheduler is the limit" is measured: how many attempts failed for
// each pod bound, and whether filtering or preemption (PostFilter) took the time.
type schedulerMetrics struct {
	attempts  map[string]float64 // result -> scheduler_schedule_attempts_total
	pointSecs map[string]float64 // extension point -> seconds (scheduler_framework_extension_point_duration_seconds_sum)
	algoSecs  float64            // scheduler_scheduling_algorithm_duration_seconds_sum
}

// scrapeScheduler reads kube-scheduler's /metrics (its secure port, as the cluster's admin).
// A failed scrape returns empty metrics and says so: the run goes on without the line.
func scrapeScheduler(e *provisioningEnv) schedulerMetrics {
	out := schedulerMetrics{attempts: map[string]float64{}, pointSecs: map[string]float64{}}
	port := childFlag(e, localcluster.Scheduler, "--secure-port")
	if port == "" {
		fmt.Println("scale: kube-scheduler's port not found: no scheduler metrics")
		return out
	}
	raw, err := getSecure(e.ctx, e, "https://127.0.0.1:"+port+"/metrics")
	if err != nil {
		fmt.Printf("scale: scraping kube-scheduler's metrics: %v\n", err)
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		if n, v, ok := strings.Cut(line, " "); ok && n == "scheduler_scheduling_algorithm_duration_seconds_sum" {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out.algoSecs += f
			}
			continue
		}
		switch name {
		case "scheduler_schedule_attempts_total", "scheduler_framework_extension_point_duration_seconds_sum",
			"scheduler_scheduling_algorithm_duration_seconds_sum":
		default:
			continue
		}
		labels, v, ok := splitSample(line)
		if !ok {
			continue
		}
		switch name {
		case "scheduler_schedule_attempts_total":
			out.attempts[labels["result"]] += v
		case "scheduler_framework_extension_point_duration_seconds_sum":
			out.pointSecs[labels["extension_point"]] += v
		default:
			out.algoSecs += v
		}
	}
	return out
}

// since is the phase from earlier to m.
func (m schedulerMetrics) since(earlier schedulerMetrics) schedulerMetrics {
	out := schedulerMetrics{attempts: map[string]float64{}, pointSecs: map[string]float64{}, algoSecs: m.algoSecs - earlier.algoSecs}
	for k, v := range m.attempts {
		out.attempts[k] = v - earlier.attempts[k]
	}
	for k, v := range m.pointSecs {
		out.pointSecs[k] = v - earlier.pointSecs[k]
	}
	return out
}

// String: attempts by result, failed attempts per pod scheduled, the algorithm's time (filter
// and score over the nodes, and PostFilter) and the busiest extension points.
func (m schedulerMetrics) String() string {
	if len(m.attempts) == 0 {
		return "no figures"
	}
	var b strings.Builder
	for _, r := range slices.Sorted(maps.Keys(m.attempts)) {
		fmt.Fprintf(&b, "%s %.0f, ", r, m.attempts[r])
	}
	if s := m.attempts["scheduled"]; s > 0 {
		fmt.Fprintf(&b, "%.2f failed attempts per pod scheduled, ", (m.attempts["unschedulable"]+m.attempts["error"])/s)
	}
	fmt.Fprintf(&b, "algorithm %.0f s", m.algoSecs)
	points := slices.SortedFunc(maps.Keys(m.pointSecs), func(a, b string) int {
		switch {
		case m.pointSecs[a] > m.pointSecs[b]:
			return -1
		case m.pointSecs[a] < m.pointSecs[b]:
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, p := range points[:min(5, len(points))] {
		fmt.Fprintf(&b, ", %s %.1f s", p, m.pointSecs[p])
	}
	return b.String()
}
