package chart_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/upstream"
)

// upstreamChart returns the directory of upstream's charts/karpenter (AWS
// provider v1.15.2, the release whose chart ours replaces).
func upstreamChart(t *testing.T) string {
	t.Helper()
	dir, err := upstream.Dir(e.Root, upstream.AWSProviderModule, upstream.AWSProviderVersion, "charts/karpenter")
	if err != nil {
		t.Fatalf("upstream's chart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "values.yaml")); err != nil {
		t.Fatalf("upstream's chart: %v", err)
	}
	return dir
}

// leaf is one leaf of a values tree: a scalar, a list, or an empty map.
type leaf struct {
	path  []string
	value any
}

func (l leaf) key() string { return strings.Join(l.path, ".") }

func leaves(prefix []string, v any) []leaf {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []leaf{{path: prefix, value: v}}
	}
	var out []leaf
	for _, k := range sortedMapKeys(m) {
		out = append(out, leaves(append(append([]string(nil), prefix...), k), m[k])...)
	}
	return out
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// setPath sets path in a values tree, creating the maps on the way.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func cloneValues(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// nonDefault are the values the differential test gives the keys whose
// type has no obvious other value (booleans are flipped): a key of
// upstream's values.yaml missing here fails the test, so a new upstream key
// is looked at. Each is valid for both charts.
var nonDefault = map[string]any{
	"nameOverride":          "kp",
	"fullnameOverride":      "kp-full",
	"additionalLabels":      map[string]any{"team": "platform"},
	"additionalAnnotations": map[string]any{"owner": "platform"},
	"imagePullPolicy":       "Always",
	"imagePullSecrets":      []any{map[string]any{"name": "regcred"}},
	"service.annotations":   map[string]any{"svc": "annotated"},
	"serviceAccount.name":   "kp-sa",
	"serviceAccount.annotations": map[string]any{
		"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/kp",
	},
	"additionalClusterRoleRules":             []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}},
	"serviceMonitor.additionalLabels":        map[string]any{"release": "prom"},
	"serviceMonitor.relabelings":             []any{map[string]any{"action": "replace", "targetLabel": "cluster", "replacement": "prod"}},
	"serviceMonitor.metricRelabelings":       []any{map[string]any{"action": "drop", "regex": "go_.*", "sourceLabels": []any{"__name__"}}},
	"serviceMonitor.endpointConfig":          map[string]any{"interval": "15s"},
	"serviceMonitor.sampleLimit":             5000,
	"replicas":                               3,
	"revisionHistoryLimit":                   4,
	"strategy.rollingUpdate.maxUnavailable":  2,
	"podLabels":                              map[string]any{"tier": "control"},
	"podAnnotations":                         map[string]any{"prometheus.io/scrape": "true"},
	"podDisruptionBudget.name":               "kp-pdb",
	"podDisruptionBudget.maxUnavailable":     2,
	"podSecurityContext.fsGroup":             1000,
	"podSecurityContext.seccompProfile.type": "Unconfined",
	"priorityClassName":                      "high",
	"terminationGracePeriodSeconds":          45,
	"schedulerName":                          "custom-scheduler",
	"dnsPolicy":                              "ClusterFirstWithHostNet",
	"dnsConfig":                              map[string]any{"options": []any{map[string]any{"name": "ndots", "value": "2"}}},
	// Upstream's default is {}, but the value is a list of containers.
	"initContainers":                []any{map[string]any{"name": "init", "image": "busybox", "command": []any{"true"}}},
	"nodeSelector.kubernetes.io/os": "windows",
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": []any{map[string]any{
		"matchExpressions": []any{map[string]any{"key": "node-group", "operator": "In", "values": []any{"system"}}},
	}},
	"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution": []any{
		map[string]any{"topologyKey": "topology.kubernetes.io/zone"},
		map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": map[string]any{"app": "other"}}},
	},
	"topologySpreadConstraints":                  []any{map[string]any{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}},
	"tolerations":                                []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}},
	"extraVolumes":                               []any{map[string]any{"name": "extra", "emptyDir": map[string]any{}}},
	"controller.containerName":                   "karpenter-controller",
	"controller.image.repository":                "registry.example.com/karpenter",
	"controller.image.tag":                       "v9.9.9",
	"controller.image.digest":                    "sha256:0000000000000000000000000000000000000000000000000000000000000000",
	"controller.env":                             []any{map[string]any{"name": "AWS_REGION", "value": "eu-west-1"}},
	"controller.envFrom":                         []any{map[string]any{"configMapRef": map[string]any{"name": "extra-env"}}},
	"controller.securityContext.appArmorProfile": map[string]any{"type": "RuntimeDefault"},
	"controller.securityContext.seLinuxOptions":  map[string]any{"level": "s0:c123,c456"},
	"controller.securityContext.seccompProfile":  map[string]any{"type": "RuntimeDefault"},
	"controller.resources":                       map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": map[string]any{"memory": "1Gi"}},
	"controller.extraVolumeMounts":               []any{map[string]any{"name": "extra", "mountPath": "/extra"}},
	"controller.sidecarContainer":                []any{map[string]any{"name": "sidecar", "image": "busybox"}},
	"controller.sidecarVolumeMounts":             []any{map[string]any{"name": "side", "mountPath": "/side"}},
	"controller.metrics.port":                    9090,
	"controller.healthProbe.port":                9091,
	"logLevel":                                   "debug",
	"logOutputPaths":                             []any{"stdout", "/var/log/karpenter.log"},
	"logErrorOutputPaths":                        []any{"stdout"},
	"settings.batchMaxDuration":                  "20s",
	"settings.batchIdleDuration":                 "2s",
	"settings.preferencePolicy":                  "Ignore",
	"settings.minValuesPolicy":                   "BestEffort",
	"settings.clusterCABundle":                   "Y2EtYnVuZGxl",
	"settings.clusterName":                       "prod",
	"settings.clusterEndpoint":                   "https://api.example.com",
	"settings.vmMemoryOverheadPercent":           0.1,
	"settings.interruptionQueue":                 "prod-queue",
	"settings.reservedENIs":                      "2",
	"settings.ignoreDRARequests":                 false,
	"settings.amiRefreshInterval":                "5m",
	"settings.subnetRefreshInterval":             "10m",
	"settings.securityGroupRefreshInterval":      "15m",
	"settings.awsFeatureGates.draNVIDIAGPU":      true,
	"settings.awsFeatureGates.draEFA":            true,
}

// companions are values set with a key so that the key has something to
// act on (the ServiceMonitor's keys need the ServiceMonitor, the sidecars'
// mounts a sidecar, legacy node repair its gate).
var companions = map[string]map[string]any{
	"serviceMonitor.":                {"serviceMonitor.enabled": true},
	"controller.sidecarVolumeMounts": {"controller.sidecarContainer": []any{map[string]any{"name": "sidecar", "image": "busybox"}}},
	"settings.legacyNodeRepair":      {"settings.featureGates.nodeRepair": true},
}

// ourEnvOnly are env vars only our chart renders, left out of the comparison.
var ourEnvOnly = map[string]string{
	"CLOUD_PROVIDER":  "this chart also runs the KWOK provider (cloudProvider); upstream's binary is AWS only",
	"DISABLE_WEBHOOK": "this chart's webhook.enabled (the v1beta1 conversion webhook), which upstream v1.15 no longer has",
	"POD_NAME":        "the leader identity, so that a restarted container takes its own Lease back at once",
}

// knownDifferences are keys whose rendering differs from upstream's on
// purpose, with the reason; the test fails when one of them renders the
// same after all (so that the list stays true).
var knownDifferences = map[string]string{}

// TestUpstreamValuesDifferential renders upstream's chart and ours with
// upstream v1.15.2's values.yaml, and with each of its leaf keys set to a
// value other than its default, and compares what both charts render of the
// controller's Deployment (pod fields; the controller container's fields and
// env), the ServiceMonitor, the Service's and ServiceAccount's annotations,
// the PodDisruptionBudget and the extra ClusterRole rules.
func TestUpstreamValuesDifferential(t *testing.T) {
	upDir := upstreamChart(t)
	upValues := readValues(t, filepath.Join(upDir, "values.yaml"))
	keys := leaves(nil, upValues)
	if len(keys) < 80 {
		t.Fatalf("only %d leaf keys in upstream's values.yaml", len(keys))
	}
	dir := t.TempDir()
	write := func(name string, v map[string]any) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := cloneValues(t, upValues)
	setPath(base, []string{"settings", "clusterName"}, "dev") // required by both
	type row struct{ key, accepted, rendered string }
	var rows []row
	var baseline map[string]any // upstream's rendering of its own values
	// compare renders both charts with file; alone, when set, is a values
	// file holding only the key (and its companions), which our chart must
	// accept by itself.
	compare := func(key, file, alone string) row {
		r := row{key: key, accepted: "yes"}
		if alone != "" {
			if _, err := renderDir(chartDir("karpenter"), alone); err != nil {
				r.accepted, r.rendered = "NO", "refused: "+firstLine(err.Error())
				return r
			}
		}
		ours, err := renderDir(chartDir("karpenter"), file)
		if err != nil {
			if alone == "" {
				r.accepted = "NO"
			}
			r.rendered = "refused with the rest of upstream's values: " + firstLine(err.Error())
			return r
		}
		theirs, err := renderDir(upDir, file)
		if err != nil {
			r.rendered = "upstream refused: " + firstLine(err.Error())
			return r
		}
		upstream := project(theirs)
		diffs := diffProjections(project(ours), upstream)
		switch {
		case baseline == nil:
			baseline = upstream
			fallthrough
		case len(diffs) == 0 && len(diffProjections(upstream, baseline)) > 0:
			r.rendered = "same"
		case len(diffs) == 0:
			// The comparison would not see a difference: the key changes
			// nothing the test compares.
			r.rendered = "no effect on the compared objects in upstream's rendering"
		default:
			r.rendered = "DIFFERENT: " + strings.Join(diffs, "; ")
		}
		return r
	}
	rows = append(rows, compare("(upstream's values.yaml)", write("upstream.yaml", base), ""))
	for i, l := range keys {
		key := l.key()
		v, ok := nonDefault[key]
		if !ok {
			b, isBool := l.value.(bool)
			if !isBool {
				t.Errorf("%s: no non-default value for this upstream key (default %v): add one to nonDefault", key, l.value)
				continue
			}
			v = !b
		}
		vals, alone := cloneValues(t, base), map[string]any{}
		if key != "settings.clusterName" {
			setPath(alone, []string{"settings", "clusterName"}, "dev")
		}
		for _, m := range []map[string]any{vals, alone} {
			for prefix, extra := range companions {
				if strings.HasPrefix(key, prefix) {
					for p, x := range extra {
						setPath(m, strings.Split(p, "."), x)
					}
				}
			}
			setPath(m, l.path, v)
		}
		rows = append(rows, compare(key, write(fmt.Sprintf("key-%03d.yaml", i), vals), write(fmt.Sprintf("alone-%03d.yaml", i), alone)))
	}

	var table strings.Builder
	accepted, same := 0, 0
	fmt.Fprintf(&table, "%-72s %-8s %s\n", "upstream key", "accepted", "rendered")
	for _, r := range rows {
		fmt.Fprintf(&table, "%-72s %-8s %s\n", r.key, r.accepted, r.rendered)
		if r.accepted == "yes" {
			accepted++
		}
		reason, known := knownDifferences[r.key]
		switch {
		case r.accepted != "yes" || strings.HasPrefix(r.rendered, "refused"):
			t.Errorf("%s: our chart refuses it: %s", r.key, r.rendered)
		case r.rendered == "same":
			same++
			if known {
				t.Errorf("%s renders as upstream's now: drop it from knownDifferences (%s)", r.key, reason)
			}
		case !known:
			t.Errorf("%s: %s", r.key, r.rendered)
		}
	}
	fmt.Fprintf(&table, "%d upstream keys and upstream's values.yaml itself: %d of these %d accepted by our chart, %d rendered as upstream's\n", len(keys), accepted, len(rows), same)
	fmt.Fprintf(&table, "env vars only this chart renders (not compared):\n")
	for _, k := range sortedMapKeys(toAny(ourEnvOnly)) {
		fmt.Fprintf(&table, "  %s: %s\n", k, ourEnvOnly[k])
	}
	t.Log("\n" + table.String())
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// firstLine shortens helm's error to its last line, which names the value
// (the schema's complaint, or the template's fail message).
func firstLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(lines[len(lines)-1])
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// readValues reads a YAML values file.
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// renderDir renders a chart directory with a values file, as release
// "karpenter" in namespace "karpenter", with prometheus-operator's API
// known (upstream renders its ServiceMonitor only then).
func renderDir(dir, values string) ([]*unstructured.Unstructured, error) {
	out, err := helm.Run("template", "karpenter", dir, "--namespace", "karpenter", "-f", values, "--api-versions", "monitoring.coreos.com/v1")
	if err != nil {
		return nil, err
	}
	return helm.Decode(out)
}

// project picks, from a chart's objects, what the differential test
// compares, by name of the part.
func project(objs []*unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	version := func(labels map[string]string) map[string]string {
		// The chart's version differs (ours follows this repository).
		delete(labels, "helm.sh/chart")
		delete(labels, "app.kubernetes.io/version")
		return labels
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			obj := o.DeepCopy().Object
			out["Deployment.metadata"] = map[string]any{"name": o.GetName(), "labels": version(o.GetLabels()), "annotations": o.GetAnnotations()}
			spec, _, _ := unstructured.NestedMap(obj, "spec")
			tmpl, _ := spec["template"].(map[string]any)
			delete(spec, "template")
			out["Deployment.spec"] = spec
			out["pod.metadata"] = tmpl["metadata"]
			pod, _ := tmpl["spec"].(map[string]any)
			containers, _ := pod["containers"].([]any)
			delete(pod, "containers")
			for k, v := range pod {
				out["pod."+k] = v
			}
			if len(containers) > 0 {
				c := containers[0].(map[string]any)
				env := map[string]any{}
				for _, ev := range asList(c["env"]) {
					m := ev.(map[string]any)
					name := fmt.Sprint(m["name"])
					if _, skip := ourEnvOnly[name]; skip {
						continue
					}
					if v, ok := m["value"]; ok {
						env[name] = fmt.Sprint(v)
					} else {
						env[name] = m["valueFrom"]
					}
				}
				out["controller.env"] = env
				for k, v := range c {
					if k != "env" {
						out["controller."+k] = v
					}
				}
				out["sidecars"] = containers[1:]
			}
		case "ServiceMonitor":
			out["ServiceMonitor"] = map[string]any{"name": o.GetName(), "labels": version(o.GetLabels()), "annotations": o.GetAnnotations(), "spec": o.Object["spec"]}
		case "Service":
			out["Service.metadata.annotations"] = o.GetAnnotations()
		case "ServiceAccount":
			out["ServiceAccount"] = map[string]any{"name": o.GetName(), "annotations": o.GetAnnotations()}
		case "PodDisruptionBudget":
			out["PodDisruptionBudget"] = map[string]any{"name": o.GetName(), "spec": o.Object["spec"]}
		case "ClusterRole":
			if strings.HasSuffix(o.GetName(), "-core") {
				// Only additionalClusterRoleRules and the pods rule: the
				// rest of the RBAC is each implementation's own (rbac_test.go).
				rules := asList(o.Object["rules"])
				var picked []any
				for _, r := range rules {
					m := r.(map[string]any)
					if reflect.DeepEqual(m["resources"], []any{"pods"}) || reflect.DeepEqual(m["resources"], []any{"configmaps"}) {
						picked = append(picked, m)
					}
				}
				out["ClusterRole core: pods and additional rules"] = picked
			}
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// diffProjections names the parts that differ, with both values.
func diffProjections(ours, theirs map[string]any) []string {
	names := map[string]bool{}
	for k := range ours {
		names[k] = true
	}
	for k := range theirs {
		names[k] = true
	}
	var out []string
	for _, k := range sortedMapKeys(toAnyBool(names)) {
		a, b := clean(ours[k]), clean(theirs[k])
		if !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("%s: ours %s, upstream's %s", k, compact(a), compact(b)))
		}
	}
	return out
}

func toAnyBool(m map[string]bool) map[string]any {
	out := map[string]any{}
	for k := range m {
		out[k] = true
	}
	return out
}

// clean drops nulls and empty maps/lists (absent and empty render alike),
// makes numbers comparable, and turns string maps into generic ones.
func clean(v any) any {
	switch t := v.(type) {
	case map[string]string:
		m := map[string]any{}
		for k, x := range t {
			m[k] = x
		}
		return clean(m)
	case map[string]any:
		m := map[string]any{}
		for k, x := range t {
			if c := clean(x); c != nil {
				m[k] = c
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	case []any:
		if len(t) == 0 {
			return nil
		}
		l := make([]any, len(t))
		for i := range t {
			l[i] = clean(t[i])
		}
		return l
	case nil:
		return nil
	}
	return norm(v)
}

func compact(v any) string {
	var b bytes.Buffer
	data, _ := json.Marshal(v)
	b.Write(data)
	if b.Len() > 400 {
		return b.String()[:400] + "..."
	}
	return b.String()
}

// TestUpstreamRefusalsAreOurs: the combinations upstream's chart refuses to
// render, ours refuses too, naming the same values.
func TestUpstreamRefusalsAreOurs(t *testing.T) {
	upDir := upstreamChart(t)
	for name, c := range map[string]struct {
		set  []string
		says string
	}{
		"enableDRA with ignoreDRARequests": {[]string{"settings.enableDRA=true", "settings.ignoreDRARequests=true"}, "settings.ignoreDRARequests"},
		"enableDRA with a DRA gate":        {[]string{"settings.enableDRA=true", "settings.awsFeatureGates.draEFA=false"}, "settings.awsFeatureGates.draEFA"},
		"legacy repair terminating first":  {[]string{"settings.legacyNodeRepair=true", "settings.featureGates.terminateFirstRepair=true"}, "settings.featureGates.terminateFirstRepair"},
		"no cluster name":                  {nil, "settings.clusterName"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{}
			if name != "no cluster name" {
				args = append(args, "--set", "settings.clusterName=dev")
			}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			for chart, dir := range map[string]string{"upstream's": upDir, "ours": chartDir("karpenter")} {
				_, err := helm.Run(append([]string{"template", "karpenter", dir, "--namespace", "karpenter"}, args...)...)
				if err == nil || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%s chart with %v: %v, want a refusal naming %s", chart, c.set, err, c.says)
				}
			}
		})
	}
}
