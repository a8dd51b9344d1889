package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/chartrun"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// chartInstall is the karpenter chart's identity and settings installed into
// a local cluster: what `helm install` would create, minus the Deployment,
// whose pods the test runs as local processes instead (chartrun.Start).
type chartInstall struct {
	namespace string
	deploy    *appsv1.Deployment
}

// installChart renders the karpenter chart (release "karpenter" in namespace
// "karpenter", the KWOK provider plus args) and server-side applies every
// object except the Deployment.
func installChart(t testing.TB, c client.Client, args ...string) *chartInstall {
	t.Helper()
	const ns = "karpenter"
	d, err := chartrun.Install(context.Background(), c, "karpenter", ns, append([]string{"--set", "cloudProvider=kwok"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &chartInstall{namespace: ns, deploy: d}
}

// startChartKarpenter runs Karpenter as a pod of the chart's Deployment
// (named after logName: karpenter-0.log is the pod karpenter-0), with the
// chart's ServiceAccount and settings.
func (e *provisioningEnv) startChartKarpenter(t testing.TB, in *chartInstall, logName string) *kit.Process {
	t.Helper()
	p, err := chartrun.Start(e.ctx, e.Client, e.Kubeconfig, e.StateDir, karpenterBinary(t), in.deploy, strings.TrimSuffix(logName, ".log"))
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
