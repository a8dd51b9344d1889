package options

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const zoneAndHostnameDefaults = `
podTopologySpread:
  defaultConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
  - maxSkew: 3
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: DoNotSchedule
`

func TestSchedulerConfigIsUnsetByDefault(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.SchedulerConfig != nil || o.SchedulerConfig.DefaultTopologySpreadConstraints() != nil {
		t.Fatalf("scheduler config %+v, want none", o.SchedulerConfig)
	}
}

func TestSchedulerConfigDefaultConstraintsAreRead(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"yaml in the environment": {env: map[string]string{"SCHEDULER_CONFIG": zoneAndHostnameDefaults}},
		"json as a flag": {args: []string{`--scheduler-config={"podTopologySpread":{"defaultConstraints":[` +
			`{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"},` +
			`{"maxSkew":3,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"}]}}`}},
		"the flag wins over the environment": {
			env:  map[string]string{"SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 0}]}"},
			args: []string{"--scheduler-config=" + zoneAndHostnameDefaults},
		},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			got := o.SchedulerConfig.DefaultTopologySpreadConstraints()
			if len(got) != 2 {
				t.Fatalf("default constraints %+v, want 2", got)
			}
			if got[0].MaxSkew != 1 || got[0].TopologyKey != corev1.LabelTopologyZone || got[0].WhenUnsatisfiable != corev1.ScheduleAnyway {
				t.Errorf("first constraint %+v", got[0])
			}
			if got[1].MaxSkew != 3 || got[1].TopologyKey != corev1.LabelHostname || got[1].WhenUnsatisfiable != corev1.DoNotSchedule {
				t.Errorf("second constraint %+v", got[1])
			}
		})
	}
}

func TestBadSchedulerConfigStopsStartUp(t *testing.T) {
	for name, tc := range map[string]struct {
		value string
		want  []string
	}{
		"a file path":          {value: "/etc/kubernetes/scheduler-config.yaml", want: []string{"not a YAML/JSON document", "not a file path"}},
		"not yaml":             {value: "podTopologySpread: [unclosed", want: []string{"decoding"}},
		"unknown field":        {value: "podTopologySpread: {defaultConstraint: []}", want: []string{"decoding", "defaultConstraint"}},
		"a kube-scheduler one": {value: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n", want: []string{"decoding", "apiVersion"}},
		"zero max skew":        {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}", want: []string{"defaultConstraints[0].maxSkew 0: must be greater than 0"}},
		"no topology key":      {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}", want: []string{"defaultConstraints[0].topologyKey: must be set"}},
		"bad topology key":     {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: 'a b', whenUnsatisfiable: DoNotSchedule}]}", want: []string{`topologyKey "a b": not a valid label key`}},
		"bad unsatisfiable": {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}]}",
			want: []string{`whenUnsatisfiable "Maybe": must be DoNotSchedule or ScheduleAnyway`}},
		"a label selector": {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: a}}}]}",
			want: []string{"labelSelector: must not be set"}},
		"match label keys": {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}]}",
			want: []string{"matchLabelKeys: must not be set"}},
		"a repeated constraint": {value: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}",
			want: []string{"defaultConstraints[1]: repeats defaultConstraints[0]"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(nil, env(map[string]string{"SCHEDULER_CONFIG": tc.value}))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range append([]string{"scheduler-config (SCHEDULER_CONFIG): "}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
		})
	}
}
