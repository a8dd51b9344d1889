package chart_test

import (
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"

	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers"
)

func TestLint(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"lint", "--strict", chartDir("karpenter"), "--set", "settings.clusterName=lint"},
		{"lint", "--strict", chartDir("karpenter"), "-f", "testdata/every-value.yaml"},
		{"lint", "--strict", chartDir("karpenter"), "--set", "cloudProvider=kwok"},
		{"lint", "--strict", chartDir("karpenter-crd")},
		{"lint", "--strict", chartDir("karpenter-crd"), "--set", "webhook.enabled=true"},
	} {
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

func TestRenderDefaults(t *testing.T) {
	t.Parallel()
	objs := render(t, "karpenter", "--set", "settings.clusterName=dev")
	deploy := find(t, objs, "Deployment", "karpenter")
	if got := nested(t, deploy, "spec", "replicas"); norm(got) != norm(2) {
		t.Errorf("replicas = %v, want upstream's 2", got)
	}
	spec := nested(t, deploy, "spec", "template", "spec").(map[string]any)
	if spec["priorityClassName"] != "system-cluster-critical" || spec["dnsPolicy"] != "ClusterFirst" || spec["serviceAccountName"] != "karpenter" {
		t.Errorf("pod spec: priorityClassName %v, dnsPolicy %v, serviceAccountName %v", spec["priorityClassName"], spec["dnsPolicy"], spec["serviceAccountName"])
	}
	// The controller never runs on a node Karpenter launched, and spreads across zones.
	expr := nested(t, deploy, "spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").([]any)[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
	if expr["key"] != "karpenter.sh/nodepool" || expr["operator"] != "DoesNotExist" {
		t.Errorf("node affinity %v, want karpenter.sh/nodepool DoesNotExist", expr)
	}
	tsc := nested(t, deploy, "spec", "template", "spec", "topologySpreadConstraints").([]any)[0].(map[string]any)
	if tsc["topologyKey"] != "topology.kubernetes.io/zone" || tsc["whenUnsatisfiable"] != "DoNotSchedule" || tsc["labelSelector"] == nil {
		t.Errorf("topology spread %v, want a zonal DoNotSchedule constraint selecting the chart's pods", tsc)
	}
	anti := nested(t, deploy, "spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution").([]any)[0].(map[string]any)
	if anti["topologyKey"] != "kubernetes.io/hostname" || anti["labelSelector"] == nil {
		t.Errorf("pod anti-affinity %v, want one replica per hostname", anti)
	}
	want := map[string]string{
		"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "dev", "LOG_LEVEL": "info", "METRICS_PORT": "8080", "HEALTH_PROBE_PORT": "8081",
		"BATCH_MAX_DURATION": "10s", "BATCH_IDLE_DURATION": "1s", "VM_MEMORY_OVERHEAD_PERCENT": "0.075", "RESERVED_ENIS": "0",
		"PREFERENCE_POLICY": "Respect", "MIN_VALUES_POLICY": "Strict",
		"FEATURE_GATES":       "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
		"AWS_FEATURE_GATES":   "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false",
		"IGNORE_DRA_REQUESTS": "true", "AMI_REFRESH_INTERVAL": "1m", "SUBNET_REFRESH_INTERVAL": "1m", "SECURITY_GROUP_REFRESH_INTERVAL": "1m",
		"DISABLE_WEBHOOK": "true", "SYSTEM_NAMESPACE": "<from>", "POD_NAME": "<from>", "MEMORY_LIMIT": "<from>", "CPU_REQUESTS": "<from>", "LOG_OUTPUT_PATHS": "stdout", "LOG_ERROR_OUTPUT_PATHS": "stderr",
	}
	got := containerEnv(t, deploy)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	// As upstream's chart, the booleans whose controller default is false are set only when true.
	for _, unset := range []string{"INTERRUPTION_QUEUE", "CLUSTER_ENDPOINT", "WEBHOOK_PORT", "ISOLATED_VPC", "EKS_CONTROL_PLANE", "ENABLE_ZONAL_SHIFT",
		"DISABLE_DRY_RUN", "LEGACY_NODE_REPAIR", "DISABLE_CLUSTER_STATE_OBSERVABILITY"} {
		if _, ok := got[unset]; ok {
			t.Errorf("env %s set by default", unset)
		}
	}
	pdb := find(t, objs, "PodDisruptionBudget", "karpenter")
	if got := nested(t, pdb, "spec", "maxUnavailable"); norm(got) != norm(1) {
		t.Errorf("PDB maxUnavailable = %v, want 1", got)
	}
	find(t, objs, "ServiceAccount", "karpenter")
	find(t, objs, "Service", "karpenter")
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			t.Error("ServiceMonitor rendered although serviceMonitor.enabled is false")
		}
	}
	if img := firstContainer(t, deploy)["image"]; img != "ghcr.io/karpenter-go/karpenter/controller:1.14.0" {
		t.Errorf("image %v, want the appVersion tag", img)
	}
}

func TestEKSValues(t *testing.T) {
	t.Parallel()
	objs := render(t, "karpenter", "-f", "testdata/eks.yaml")
	sa := find(t, objs, "ServiceAccount", "karpenter")
	if got := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/KarpenterController-prod-euw1" {
		t.Errorf("IRSA annotation = %q", got)
	}
	env := containerEnv(t, find(t, objs, "Deployment", "karpenter"))
	for k, v := range map[string]string{
		"CLUSTER_NAME": "prod-euw1", "CLUSTER_ENDPOINT": "https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com",
		"INTERRUPTION_QUEUE": "Karpenter-prod-euw1", "EKS_CONTROL_PLANE": "true",
		"FEATURE_GATES": "ReservedCapacity=true,SpotToSpotConsolidation=true,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
}

func TestClusterNameRequiredForAWS(t *testing.T) {
	t.Parallel()
	_, err := runHelm(t, "template", "karpenter", chartDir("karpenter"))
	if err == nil || !strings.Contains(err.Error(), "settings.clusterName is required when cloudProvider is aws") {
		t.Fatalf("rendering without settings.clusterName: %v, want the message naming settings.clusterName", err)
	}
	// The KWOK provider needs no cluster name.
	render(t, "karpenter", "--set", "cloudProvider=kwok")
}

func TestSchemaNamesTheBadKey(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		values string
		want   []string
	}{
		"unknown setting":       {"settings:\n  clusterName: x\n  clusterNmae: y\n", []string{"clusterNmae", "/settings"}},
		"v0.3x settings.aws":    {"settings:\n  clusterName: x\n  aws:\n    clusterName: x\n", []string{"'aws'", "/settings"}},
		"unknown top-level key": {"settings:\n  clusterName: x\nreplica: 3\n", []string{"'replica'"}},
		"wrong type":            {"settings:\n  clusterName: x\nreplicas: two\n", []string{"/replicas", "integer"}},
		"wrong nested type":     {"settings:\n  clusterName: x\n  featureGates:\n    nodeRepair: \"yes\"\n", []string{"/settings/featureGates/nodeRepair", "boolean"}},
		"bad duration":          {"settings:\n  clusterName: x\n  batchIdleDuration: 1 second\n", []string{"/settings/batchIdleDuration"}},
		"bad enum":              {"settings:\n  clusterName: x\nlogLevel: verbose\n", []string{"/logLevel"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(tc.values), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := runHelm(t, "template", "karpenter", chartDir("karpenter"), "-f", f)
			if err == nil {
				t.Fatal("helm template accepted the values")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
	_, err := runHelm(t, "template", "crds", chartDir("karpenter-crd"), "--set", "webhook.enable=true")
	if err == nil || !strings.Contains(err.Error(), "'enable'") {
		t.Errorf("karpenter-crd accepted webhook.enable (typo): %v", err)
	}
}

// leafKeys lists the dotted paths of a values file's leaves (maps are walked,
// anything else is a leaf).
func leafKeys(prefix string, v any, out map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		out[prefix] = true
		return
	}
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafKeys(p, sub, out)
	}
}

// TestEveryValueIsCovered keeps testdata/every-value.yaml complete: a value
// added to the chart without being set there (and checked by TestEveryValue)
// fails here.
func TestEveryValueIsCovered(t *testing.T) {
	t.Parallel()
	defaults, every := map[string]bool{}, map[string]bool{}
	leafKeys("", ExpectYAMLFile(t, filepath.Join(chartDir("karpenter"), "values.yaml")), defaults)
	leafKeys("", ExpectYAMLFile(t, "testdata/every-value.yaml"), every)
	var missing []string
	for k := range defaults {
		covered := every[k]
		for e := range every { // a map value set in full covers its default's leaves
			covered = covered || strings.HasPrefix(e, k+".") || strings.HasPrefix(k, e+".")
		}
		if !covered {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("values not set in testdata/every-value.yaml: %v", missing)
	}
}

func TestEveryValue(t *testing.T) {
	t.Parallel()
	objs := render(t, "karpenter", "-f", "testdata/every-value.yaml")
	deploy := find(t, objs, "Deployment", "kp-full")
	if deploy.GetLabels()["team"] != "platform" || deploy.GetAnnotations()["owner"] != "platform@example.com" {
		t.Errorf("additionalLabels/Annotations missing on the Deployment: %v %v", deploy.GetLabels(), deploy.GetAnnotations())
	}
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/name"] != "kp" {
			t.Errorf("%s/%s: nameOverride not in labels: %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
	}
	pod := nested(t, deploy, "spec", "template").(map[string]any)
	spec := pod["spec"].(map[string]any)
	c := firstContainer(t, deploy)
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("replicas", nested(t, deploy, "spec", "replicas"), 3)
	cert := find(t, objs, "Certificate", "karpenter-cert")
	check("webhook.certManager.issuerRef", nested(t, cert, "spec", "issuerRef"), map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
	check("webhook.certManager.duration", nested(t, cert, "spec", "duration"), "1440h")
	check("webhook.certManager.renewBefore", nested(t, cert, "spec", "renewBefore"), "360h")
	check("revisionHistoryLimit", nested(t, deploy, "spec", "revisionHistoryLimit"), 4)
	check("strategy", nested(t, deploy, "spec", "strategy", "rollingUpdate", "maxUnavailable"), 2)
	check("podLabels", nested(t, deploy, "spec", "template", "metadata", "labels", "tier"), "control")
	check("podAnnotations", nested(t, deploy, "spec", "template", "metadata", "annotations", "prometheus.io/scrape"), "true")
	check("imagePullPolicy", c["imagePullPolicy"], "Always")
	check("imagePullSecrets", spec["imagePullSecrets"], []any{map[string]any{"name": "regcred"}})
	check("serviceAccountName", spec["serviceAccountName"], "kp-sa")
	check("podSecurityContext", spec["securityContext"], map[string]any{"fsGroup": 1000, "seccompProfile": map[string]any{"type": "Unconfined"}})
	check("priorityClassName", spec["priorityClassName"], "high")
	check("terminationGracePeriodSeconds", spec["terminationGracePeriodSeconds"], 45)
	check("extraVolumes", spec["volumes"], []any{map[string]any{"name": "extra", "emptyDir": map[string]any{}}, map[string]any{"name": "side", "emptyDir": map[string]any{}}})
	check("nodeSelector", spec["nodeSelector"], map[string]any{"node-group": "system", "kubernetes.io/os": "windows"})
	check("tolerations", spec["tolerations"].([]any)[0].(map[string]any)["key"], "dedicated")
	check("schedulerName", spec["schedulerName"], "custom-scheduler")
	check("hostNetwork", spec["hostNetwork"], true)
	check("dnsPolicy", spec["dnsPolicy"], "ClusterFirstWithHostNet")
	check("dnsConfig", spec["dnsConfig"].(map[string]any)["options"].([]any)[0].(map[string]any)["value"], "2")
	aff := spec["affinity"].(map[string]any)
	check("affinity.nodeAffinity", aff["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"].([]any)[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)["key"], "node-group")
	check("affinity.podAffinity", aff["podAffinity"].(map[string]any)["preferredDuringSchedulingIgnoredDuringExecution"].([]any)[0].(map[string]any)["weight"], 10)
	check("affinity.podAntiAffinity", aff["podAntiAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].([]any)[0].(map[string]any)["topologyKey"], "topology.kubernetes.io/zone")
	check("topologySpreadConstraints", spec["topologySpreadConstraints"].([]any)[0].(map[string]any)["whenUnsatisfiable"], "ScheduleAnyway")
	check("controller.image (tag, then the digest the runtime pulls by)", c["image"], "registry.example.com/karpenter:v9.9.9@sha256:0000000000000000000000000000000000000000000000000000000000000000")
	check("controller.securityContext", c["securityContext"].(map[string]any)["seLinuxOptions"], map[string]any{"level": "s0:c123,c456"})
	check("initContainers", spec["initContainers"].([]any)[0].(map[string]any)["name"], "init")
	check("controller.sidecarVolumeMounts", spec["containers"].([]any)[1].(map[string]any)["volumeMounts"], []any{map[string]any{"name": "extra", "mountPath": "/extra"}, map[string]any{"name": "side", "mountPath": "/side"}})
	check("controller.envFrom", c["envFrom"], []any{map[string]any{"configMapRef": map[string]any{"name": "extra-env"}}})
	check("controller.resources", c["resources"], map[string]any{"limits": map[string]any{"memory": "2Gi"}})
	check("controller.extraVolumeMounts", c["volumeMounts"], []any{map[string]any{"name": "extra", "mountPath": "/extra"}})
	check("controller.containerName", c["name"], "karpenter-controller")
	check("controller.sidecarContainer", spec["containers"].([]any)[1].(map[string]any)["name"], "sidecar")
	ports := map[string]any{}
	for _, p := range c["ports"].([]any) {
		ports[p.(map[string]any)["name"].(string)] = p.(map[string]any)["containerPort"]
	}
	check("ports", ports, map[string]any{"http-metrics": 9090, "http": 9091, "https-webhook": 9443})
	env := containerEnv(t, deploy)
	for k, v := range map[string]string{
		"AWS_REGION": "eu-west-1", "METRICS_PORT": "9090", "HEALTH_PROBE_PORT": "9091", "DISABLE_WEBHOOK": "false",
		"WEBHOOK_PORT": "9443", "WEBHOOK_METRICS_PORT": "9001", "LOG_LEVEL": "debug",
		"LOG_OUTPUT_PATHS": "stdout,/var/log/karpenter.log", "LOG_ERROR_OUTPUT_PATHS": "stdout",
		"BATCH_MAX_DURATION": "20s", "BATCH_IDLE_DURATION": "2s", "CLUSTER_CA_BUNDLE": "Y2EtYnVuZGxl", "CLUSTER_NAME": "prod",
		"CLUSTER_ENDPOINT": "https://api.example.com", "ISOLATED_VPC": "true", "EKS_CONTROL_PLANE": "true",
		"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "INTERRUPTION_QUEUE": "prod-queue", "RESERVED_ENIS": "2",
		"PREFERENCE_POLICY": "Ignore", "MIN_VALUES_POLICY": "BestEffort", "CLOUD_PROVIDER": "aws", "KARPENTER_SERVICE": "kp-full",
		"SCHEDULER_CONFIG":  "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: ScheduleAnyway\n",
		"FEATURE_GATES":     "ReservedCapacity=false,SpotToSpotConsolidation=true,NodeRepair=true,NodeOverlay=true,StaticCapacity=true,CapacityBuffer=true,TerminateFirstDrift=true,TerminateFirstRepair=false,PodDeletionCostManagement=true",
		"AWS_FEATURE_GATES": "NodeClassCEL=true,DRANVIDIAGPU=false,DRAEFA=true,RebootForRepair=true",
		// An enabled DRA driver gate stops ignoring DRA requests.
		"IGNORE_DRA_REQUESTS": "false", "ENABLE_ZONAL_SHIFT": "true", "LEGACY_NODE_REPAIR": "true", "DISABLE_CLUSTER_STATE_OBSERVABILITY": "true",
		"DISABLE_DRY_RUN": "true", "AMI_REFRESH_INTERVAL": "5m", "SUBNET_REFRESH_INTERVAL": "10m", "SECURITY_GROUP_REFRESH_INTERVAL": "15m",
	} {
		check("env "+k, env[k], v)
	}
	sa := find(t, objs, "ServiceAccount", "kp-sa")
	check("serviceAccount.annotations", sa.GetAnnotations()["eks.amazonaws.com/role-arn"], "arn:aws:iam::111122223333:role/kp")
	svc := find(t, objs, "Service", "kp-full")
	check("service.annotations", svc.GetAnnotations()["svc"], "annotated")
	check("service webhook port", nested(t, svc, "spec", "ports").([]any)[1].(map[string]any)["port"], 9443)
	pdb := find(t, objs, "PodDisruptionBudget", "kp-pdb")
	check("podDisruptionBudget.maxUnavailable", nested(t, pdb, "spec", "maxUnavailable"), 2)
	sm := find(t, objs, "ServiceMonitor", "kp-full")
	check("serviceMonitor.additionalLabels", sm.GetLabels()["release"], "prom")
	ep := nested(t, sm, "spec", "endpoints").([]any)[0].(map[string]any)
	check("serviceMonitor.endpointConfig", ep["interval"], "15s")
	check("serviceMonitor.metricRelabelings", ep["metricRelabelings"].([]any)[0].(map[string]any)["regex"], "go_.*")
	check("serviceMonitor.relabelings", ep["relabelings"].([]any)[0].(map[string]any)["replacement"], "prod")
	check("serviceMonitor.sampleLimit", nested(t, sm, "spec", "sampleLimit"), 5000)
	core := find(t, objs, "ClusterRole", "kp-full-core")
	rules := nested(t, core, "rules").([]any)
	check("additionalClusterRoleRules", rules[len(rules)-1].(map[string]any)["resources"], []any{"configmaps"})
	webhookRule := false
	for _, r := range rules {
		webhookRule = webhookRule || reflect.DeepEqual(r.(map[string]any)["apiGroups"], []any{"apiextensions.k8s.io"})
	}
	check("webhook.enabled grants the CRD rule", webhookRule, true)
}

// norm makes numbers comparable whatever their decoded type.
func norm(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	case []any:
		out := make([]any, len(n))
		for i := range n {
			out[i] = norm(n[i])
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, x := range n {
			out[k] = norm(x)
		}
		return out
	}
	return v
}

// TestTheControllerAcceptsTheRenderedSettings parses the environment the chart
// gives the controller with the controller's own flag set (core options and
// the chosen provider's), so a value the binary would reject at start-up fails
// here.
func TestTheControllerAcceptsTheRenderedSettings(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"defaults":    {"--set", "settings.clusterName=dev"},
		"eks":         {"-f", "testdata/eks.yaml"},
		"every value": {"-f", "testdata/every-value.yaml"},
		"kwok":        {"--set", "cloudProvider=kwok"},
	} {
		t.Run(name, func(t *testing.T) {
			env := containerEnv(t, find(t, render(t, "karpenter", args...), "Deployment", deploymentName(args)))
			getenv := func(k string) string {
				// The every-value file sets settings.ignoreDRARequests=false, which the
				// controller refuses by design (no Dynamic Resource Allocation simulation;
				// TestIgnoreDRARequestsFalseIsRefused): the rest of its settings are judged.
				if k == "IGNORE_DRA_REQUESTS" && name == "every value" {
					return "true"
				}
				if v := env[k]; v != "<from>" {
					return v
				}
				return ""
			}
			fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
			opts, finish := options.Register(fs, getenv)
			choose := providers.Register(fs, getenv, opts)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			_, providerErr := choose()
			if err := errors.Join(finish(), providerErr); err != nil {
				t.Fatalf("the controller rejects the chart's settings: %v", err)
			}
			if opts.CloudProvider != env["CLOUD_PROVIDER"] || opts.DisableWebhook != (env["DISABLE_WEBHOOK"] == "true") {
				t.Errorf("parsed provider %q, webhook disabled %v from %v", opts.CloudProvider, opts.DisableWebhook, env)
			}
		})
	}
}

// TestIgnoreDRARequestsFalseIsRefused: the chart renders
// settings.ignoreDRARequests=false as upstream's does, and the controller
// refuses to start with it, naming the setting.
func TestIgnoreDRARequestsFalseIsRefused(t *testing.T) {
	t.Parallel()
	env := containerEnv(t, find(t, render(t, "karpenter", "--set", "settings.clusterName=dev", "--set", "settings.ignoreDRARequests=false"), "Deployment", "karpenter"))
	if env["IGNORE_DRA_REQUESTS"] != "false" {
		t.Fatalf("IGNORE_DRA_REQUESTS rendered %q, want false", env["IGNORE_DRA_REQUESTS"])
	}
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	_, finish := options.Register(fs, func(k string) string {
		if v := env[k]; v != "<from>" {
			return v
		}
		return ""
	})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err == nil || !strings.Contains(err.Error(), "IGNORE_DRA_REQUESTS") {
		t.Fatalf("the controller accepted IGNORE_DRA_REQUESTS=false (err %v)", err)
	}
}

func deploymentName(args []string) string {
	for _, a := range args {
		if strings.Contains(a, "every-value") {
			return "kp-full"
		}
	}
	return "karpenter"
}
