package controlplane

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKCMFleetArgs(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, nil},
		{Config{DisableControllers: []string{"ttl"}}, []string{"--controllers=*,-ttl"}},
		{Config{DisableControllers: []string{"ttl", "cronjob"}, NodeMonitorGracePeriod: 10 * time.Minute},
			[]string{"--controllers=*,-ttl,-cronjob", "--node-monitor-grace-period=10m0s"}},
	} {
		if got := kcmFleetArgs(tc.cfg); !slices.Equal(got, tc.want) {
			t.Errorf("kcmFleetArgs(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
	if got := flagIf(true, "--enable-pprof"); !slices.Equal(got, []string{"--enable-pprof"}) {
		t.Errorf("flagIf(true) = %q", got)
	}
	if got := flagIf(false, "--enable-pprof"); got != nil {
		t.Errorf("flagIf(false) = %q, want nothing", got)
	}
}

// TestSchedulerConfig: the file carries the share of nodes to score only when asked, and
// the MostAllocated profile only when asked, each in its place.
func TestSchedulerConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg          Config
		want, absent []string
	}{
		{Config{SchedulerPercentageOfNodesToScore: 5}, []string{"kind: KubeSchedulerConfiguration", "\npercentageOfNodesToScore: 5\n", `kubeconfig: "/kc"`}, []string{"MostAllocated", "profiles:"}},
		{Config{SchedulerMostAllocated: true}, []string{"type: MostAllocated", "\nprofiles:\n"}, []string{"percentageOfNodesToScore"}},
		{Config{SchedulerMostAllocated: true, SchedulerPercentageOfNodesToScore: 10}, []string{"type: MostAllocated", "\npercentageOfNodesToScore: 10\n"}, nil},
	} {
		got := schedulerConfig("/kc", tc.cfg)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("schedulerConfig(%+v) lacks %q:\n%s", tc.cfg, w, got)
			}
		}
		for _, a := range tc.absent {
			if strings.Contains(got, a) {
				t.Errorf("schedulerConfig(%+v) has %q:\n%s", tc.cfg, a, got)
			}
		}
	}
}
