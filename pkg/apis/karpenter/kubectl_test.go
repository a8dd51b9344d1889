package karpenter_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

// kubectl runs the kubectl built next to the apiserver against the test environment.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	e := environment(t)
	assets, err := env.BinaryAssets(e.Root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func() ([]byte, error) {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		return cmd.CombinedOutput()
	}
	out, err := run()
	// The apiserver publishes a new CRD's OpenAPI (used by explain) shortly
	// after the CRD is established; wait for it rather than fail on the lag.
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if err == nil {
			return true, nil
		}
		out, err = run()
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestKubectlExplainBudgets: `kubectl explain nodepool.spec.disruption.budgets`
// documents every budget field from the Go doc comments.
func TestKubectlExplainBudgets(t *testing.T) {
	out := kubectl(t, "explain", "nodepool.spec.disruption.budgets")
	for _, want := range []string{"karpenter.sh", "NodePool", "duration", "nodes", "reasons", "schedule", "cron expression", "most restrictive"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
		}
	}
}

// TestPrinterColumns: `kubectl get nodepools` and `kubectl get nodeclaims`
// show the upstream columns.
func TestPrinterColumns(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	np := build(t, baseNodePool, "")
	np.SetName("columns")
	nc := build(t, baseNodeClaim, "")
	nc.SetName("columns")
	if err := e.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, np) })
	if err := e.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, nc) })
	for resource, want := range map[string][]string{
		"nodepools":  {"NAME", "NODECLASS", "NODES", "READY", "AGE"},
		"nodeclaims": {"NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"},
	} {
		header := strings.Fields(strings.SplitN(kubectl(t, "get", resource), "\n", 2)[0])
		if strings.Join(header, " ") != strings.Join(want, " ") {
			t.Errorf("kubectl get %s columns = %v, want %v", resource, header, want)
		}
	}
	wide := strings.Fields(strings.SplitN(kubectl(t, "get", "nodeclaims", "-o", "wide"), "\n", 2)[0])
	if got, want := strings.Join(wide, " "), "NAME TYPE CAPACITY ZONE NODE READY AGE IMAGEID ID NODEPOOL NODECLASS DRIFTED"; got != want {
		t.Errorf("kubectl get nodeclaims -o wide columns = %s, want %s", got, want)
	}
	// The karpenter category lists both kinds.
	if out := kubectl(t, "get", "karpenter"); !strings.Contains(out, "nodepool.karpenter.sh/columns") || !strings.Contains(out, "nodeclaim.karpenter.sh/columns") {
		t.Errorf("kubectl get karpenter:\n%s", out)
	}
}
