package controlplane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
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
		{Config{SchedulerMostAllocated: true, SchedulerPercentageOfNodesToScore: 10}, []string{"type: MostAllocated", "\npercentageOfNodesToScore: 10\n"}, []string{"PodTopologySpread"}},
		{Config{SchedulerNoDefaultSpread: true}, []string{"name: PodTopologySpread", "defaultingType: List", "\nprofiles:\n"}, []string{"MostAllocated", "percentageOfNodesToScore"}},
	} {
		got := mustSchedulerConfig(t, tc.cfg)
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

// TestSchedulerConfigIsWhatKubeSchedulerReads decodes each file the way kube-scheduler does
// (its own scheme, defaults and validation): a file it would refuse, or read differently,
// fails here rather than as a cluster that never comes up.
func TestSchedulerConfigIsWhatKubeSchedulerReads(t *testing.T) {
	for _, tc := range []struct {
		cfg            Config
		mostAllocated  bool
		defaultSpread  bool
		percentOfNodes int32
	}{
		{Config{SchedulerPercentageOfNodesToScore: 5}, false, true, 5},
		{Config{SchedulerMostAllocated: true}, true, true, 0},
		{Config{SchedulerNoDefaultSpread: true}, false, false, 0},
		{Config{SchedulerNoDefaultSpread: true, SchedulerMostAllocated: true, SchedulerPercentageOfNodesToScore: 5}, true, false, 5},
	} {
		obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(mustSchedulerConfig(t, tc.cfg)), nil, nil)
		if err != nil {
			t.Fatalf("%+v: kube-scheduler cannot decode the file: %v", tc.cfg, err)
		}
		cc, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok {
			t.Fatalf("%+v: decoded a %T", tc.cfg, obj)
		}
		if err := schedvalidation.ValidateKubeSchedulerConfiguration(cc); err != nil {
			t.Fatalf("%+v: kube-scheduler refuses the file: %v", tc.cfg, err)
		}
		if got := ptr.Deref(cc.PercentageOfNodesToScore, 0); got != tc.percentOfNodes {
			t.Errorf("%+v: percentageOfNodesToScore %d, want %d", tc.cfg, got, tc.percentOfNodes)
		}
		if len(cc.Profiles) != 1 || cc.Profiles[0].SchedulerName != "default-scheduler" {
			t.Fatalf("%+v: profiles %+v, want the default-scheduler alone", tc.cfg, cc.Profiles)
		}
		for _, pc := range cc.Profiles[0].PluginConfig {
			switch args := pc.Args.(type) {
			case *schedconfig.NodeResourcesFitArgs:
				if got := args.ScoringStrategy.Type == schedconfig.MostAllocated; got != tc.mostAllocated {
					t.Errorf("%+v: scoring strategy %s", tc.cfg, args.ScoringStrategy.Type)
				}
			case *schedconfig.PodTopologySpreadArgs:
				system := args.DefaultingType == schedconfig.SystemDefaulting
				if system != tc.defaultSpread || (!system && len(args.DefaultConstraints) != 0) {
					t.Errorf("%+v: topology spreading defaults %s %v, want system defaults %t", tc.cfg, args.DefaultingType, args.DefaultConstraints, tc.defaultSpread)
				}
			}
		}
	}
}

func mustSchedulerConfig(t *testing.T, cfg Config) string {
	t.Helper()
	got, err := schedulerConfig("/kc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSchedulerProfilesFromAFile: the profiles of a KubeSchedulerConfiguration file (one
// carrying default topology spread constraints on a second profile) are what kube-scheduler
// reads; the file's own client connection is replaced by the cluster's; and the flags that
// write profiles of their own are refused with it.
func TestSchedulerProfilesFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube-scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
profiles:
  - schedulerName: default-scheduler
  - schedulerName: topology-spread-defaults
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - maxSkew: 1
              topologyKey: kubernetes.io/hostname
              whenUnsatisfiable: DoNotSchedule
`), 0o644); err != nil {
		t.Fatal(err)
	}
	text := mustSchedulerConfig(t, Config{SchedulerProfiles: path})
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(text), nil, nil)
	if err != nil {
		t.Fatalf("kube-scheduler cannot decode the file: %v\n%s", err, text)
	}
	cc := obj.(*schedconfig.KubeSchedulerConfiguration)
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cc); err != nil {
		t.Fatalf("kube-scheduler refuses the file: %v", err)
	}
	if cc.ClientConnection.Kubeconfig != "/kc" {
		t.Errorf("kubeconfig %q, want the cluster's", cc.ClientConnection.Kubeconfig)
	}
	if len(cc.Profiles) != 2 || cc.Profiles[1].SchedulerName != "topology-spread-defaults" {
		t.Fatalf("profiles %+v, want default-scheduler and topology-spread-defaults", cc.Profiles)
	}
	found := false
	for _, pc := range cc.Profiles[1].PluginConfig {
		if args, ok := pc.Args.(*schedconfig.PodTopologySpreadArgs); ok {
			found = args.DefaultingType == schedconfig.ListDefaulting && len(args.DefaultConstraints) == 1 &&
				args.DefaultConstraints[0].TopologyKey == "kubernetes.io/hostname"
		}
	}
	if !found {
		t.Errorf("the second profile lost its default constraints:\n%s", text)
	}
	if _, err := schedulerConfig("/kc", Config{SchedulerProfiles: path, SchedulerMostAllocated: true}); err == nil {
		t.Error("profiles from a file and --scheduler-most-allocated together: want an error")
	}
}
