package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// chartInstall is the karpenter chart's identity and settings installed into
// a local cluster: what `helm install` would create, minus the Deployment,
// whose pod the test runs as a local process instead (no image is built).
type chartInstall struct {
	namespace      string
	serviceAccount string
	// env is the controller container's literal environment, as rendered.
	env []string
}

// installChart renders the karpenter chart (release "karpenter" in namespace
// "karpenter", the KWOK provider plus args) and server-side applies every
// object except the Deployment.
func installChart(t testing.TB, c client.Client, args ...string) *chartInstall {
	t.Helper()
	ctx := context.Background()
	const ns = "karpenter"
	objs, err := helm.Template("karpenter", "karpenter", ns, append([]string{"--set", "cloudProvider=kwok"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		t.Fatal(err)
	}
	in := &chartInstall{namespace: ns}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			in.env = literalEnv(t, o)
			sa, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
			in.serviceAccount = sa
			continue
		case "PodDisruptionBudget", "Service":
			// Nothing to run behind them; the chart tests apply them (dry-run).
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if in.serviceAccount == "" {
		t.Fatal("the chart rendered no Deployment with a serviceAccountName")
	}
	return in
}

// literalEnv is the first container's env vars with literal values, except
// the ports, which kit.Start picks free so that tests run in parallel.
func literalEnv(t testing.TB, deploy *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	var out []string
	for _, ev := range containers[0].(map[string]any)["env"].([]any) {
		m := ev.(map[string]any)
		v, ok := m["value"]
		name := m["name"].(string)
		if !ok || name == "METRICS_PORT" || name == "HEALTH_PROBE_PORT" {
			continue
		}
		out = append(out, name+"="+fmt.Sprint(v))
	}
	return out
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// chart's ServiceAccount with a token from the TokenRequest API: the
// controller then holds exactly the chart's RBAC, as in a pod.
func (in *chartInstall) serviceAccountKubeconfig(t testing.TB, c client.Client, adminKubeconfig, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "karpenter-sa.kubeconfig")
	if err := kit.ServiceAccountKubeconfig(context.Background(), c, adminKubeconfig, in.namespace, in.serviceAccount, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startChartKarpenter runs Karpenter with the chart's identity and settings.
func (e *provisioningEnv) startChartKarpenter(t testing.TB, in *chartInstall, logName string) *kit.Process {
	t.Helper()
	kubeconfig := in.serviceAccountKubeconfig(t, e.Client, e.Kubeconfig, e.StateDir)
	env := append(append([]string{}, in.env...), "SYSTEM_NAMESPACE="+in.namespace, "LEADER_ELECTION_NAMESPACE="+in.namespace)
	p, err := kit.Start(karpenterBinary(t), kubeconfig, filepath.Join(e.StateDir, logName), env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := p.Ready(e.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	return p
}

// forbiddenLines are the log lines of a request the apiserver refused
// (403): client-go's reflectors and the controllers both say "forbidden".
func forbiddenLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			out = append(out, l)
		}
	}
	return out
}
