package values_test

import (
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"

	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/convert/values"
)

func TestConvertSeedValues(t *testing.T) {
	old := ExpectYAMLFile(t, "testdata/v0.30.yaml")
	before := ExpectYAMLFile(t, "testdata/v0.30.yaml")
	got, notes := values.Convert(old)
	if !reflect.DeepEqual(old, before) {
		t.Error("Convert modified its input")
	}
	want := map[string]any{}
	if err := yaml.Unmarshal([]byte(`
settings:
  clusterName: atlas-eks-dev-1-28-cluster
  clusterEndpoint: https://2DC9A1B2C3D4.gr7.us-east-1.eks.amazonaws.com
  interruptionQueue: karpenter-atlas-eks-dev-1-28-cluster
  reservedENIs: "1"
  batchMaxDuration: 15s
serviceAccount:
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::492***148:role/KarpenterIRSA-atlas-eks-dev-1-28-cluster
    eks.amazonaws.com/sts-regional-endpoints: "true"
webhook:
  port: 8443
logOutputPaths: [stdout]
logErrorOutputPaths: [stderr]
logLevel: debug
controller:
  env:
    - name: DISABLE_LEADER_ELECTION
      value: "true"
    - name: AWS_REGION
      value: us-east-1
replicas: 2
`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := yaml.Marshal(got)
		t.Errorf("converted values:\n%s", a)
	}
	byKey := map[string]values.Note{}
	for _, n := range notes {
		byKey[n.Key] = n
	}
	for key, want := range map[string]string{
		"settings.aws.clusterName":            "-> settings.clusterName",
		"settings.aws.interruptionQueueName":  "-> settings.interruptionQueue",
		"settings.aws.defaultInstanceProfile": "spec.role",
		"settings.aws.tags":                   "spec.tags",
		"settings.aws.enablePodENI":           "removed",
		"settings.featureGates.drift":         "always on",
		"webhook.enabled":                     "conversion webhook",
		"logConfig.logLevel.controller":       "-> logLevel",
		"logConfig.logLevel.global":           "logLevel was set too and wins",
		"logConfig.logEncoding":               "JSON",
		"logConfig.enabled":                   "replaced",
		"controller.env[LEADER_ELECT]":        "DISABLE_LEADER_ELECTION",
	} {
		n, ok := byKey[key]
		if !ok {
			t.Errorf("no note for %s", key)
			continue
		}
		if !strings.Contains(n.String(), want) {
			t.Errorf("note for %s = %q, want it to say %q", key, n, want)
		}
	}
}

func TestV1ValuesAreLeftAlone(t *testing.T) {
	v1 := ExpectYAMLFile(t, "../../../charts/karpenter/values.yaml")
	got, notes := values.Convert(v1)
	if !reflect.DeepEqual(got, v1) {
		t.Error("Convert changed the v1 chart's own values")
	}
	if f := values.Findings(v1); len(f) != 0 {
		t.Errorf("findings on the v1 chart's own values: %v (notes %v)", f, notes)
	}
}

func TestUnknownKeysAreNoted(t *testing.T) {
	_, notes := values.Convert(map[string]any{"replica": 3, "settings": map[string]any{"clusterNmae": "x",
		"featureGates": map[string]any{"Drift": true, "capacityBuffer": true}, "awsFeatureGates": map[string]any{"draGPU": true, "draEFA": true}}})
	var keys []string
	for _, n := range notes {
		keys = append(keys, n.Key)
	}
	sort.Strings(keys)
	if want := []string{"replica", "settings.awsFeatureGates.draGPU", "settings.clusterNmae", "settings.featureGates.Drift"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("noted %v, want %v", keys, want)
	}
}

// The key lists follow the chart: a value added to charts/karpenter must be
// added here, or migrated values using it would be noted as unknown.
func TestKeyListsMatchTheChart(t *testing.T) {
	v1 := ExpectYAMLFile(t, filepath.Join("..", "..", "..", "charts", "karpenter", "values.yaml"))
	check := func(what string, m map[string]any, want []string) {
		t.Helper()
		var have []string
		for k := range m {
			have = append(have, k)
		}
		sort.Strings(have)
		w := append([]string(nil), want...)
		sort.Strings(w)
		if !reflect.DeepEqual(have, w) {
			t.Errorf("%s: chart has %v, package lists %v", what, have, w)
		}
	}
	check("top-level", v1, values.TopLevelKeys)
	settings := v1["settings"].(map[string]any)
	check("settings", settings, values.SettingsKeys)
	check("featureGates", settings["featureGates"].(map[string]any), values.FeatureGates)
	check("awsFeatureGates", settings["awsFeatureGates"].(map[string]any), values.AWSFeatureGates)
}

func TestLooksLikeValues(t *testing.T) {
	if !values.LooksLikeValues(map[string]any{"settings": map[string]any{}}) {
		t.Error("values with settings not recognised")
	}
	if values.LooksLikeValues(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "settings": 1}) {
		t.Error("a Kubernetes object taken for values")
	}
}
