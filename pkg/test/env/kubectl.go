package env

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
)

// Kubectl runs the kubectl built with the control plane against the
// environment, as a user would, and fails the test when it fails. Its
// kubeconfig, HOME and discovery cache live in the test's temporary directory.
func (e *Environment) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := e.kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// KubectlEventually is Kubectl retried for up to 30 s while it fails. kubectl
// explain needs it: the API server republishes a CRD's OpenAPI schema
// asynchronously after every CRD change, and explain reads only that schema.
func (e *Environment) KubectlEventually(t testing.TB, args ...string) string {
	t.Helper()
	var out string
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out, lastErr = e.kubectl(t, args...)
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), lastErr, out)
	}
	return out
}

func (e *Environment) kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin, err := BinaryAssets(e.Root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
