package controlplane

import (
	"slices"
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
