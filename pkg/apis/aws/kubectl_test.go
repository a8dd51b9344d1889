package aws_test

import (
	"context"
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

// kubectl runs the kubectl built with the control plane against the test
// API server.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tryKubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// explain runs kubectl explain, waiting for the API server to publish the
// CRD's OpenAPI schema: it is rebuilt asynchronously after every CRD change
// (TestMain just switched v1beta1 on), and explain reads only that schema.
func explain(t *testing.T, field string) string {
	t.Helper()
	var out string
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out, lastErr = tryKubectl(t, "explain", field)
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl explain %s: %v\n%s", field, lastErr, out)
	}
	return out
}

func tryKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := env.BinaryAssets(e.Root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", path, "--cache-dir", filepath.Join(filepath.Dir(path), "cache")}, args...)...).CombinedOutput()
	return string(out), err
}

// TestKubectlExplain: the doc comments reach users through kubectl explain,
// under the short name too.
func TestKubectlExplain(t *testing.T) {
	out := explain(t, "ec2nc.spec.metadataOptions")
	for _, want := range []string{"httpPutResponseHopLimit", "httpTokens", "instance metadata service", "pods (one hop further away)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain ec2nc.spec.metadataOptions lacks %q:\n%s", want, out)
		}
	}
	out = explain(t, "ec2nodeclass.spec.amiSelectorTerms.alias")
	if !strings.Contains(out, "family@version") {
		t.Errorf("kubectl explain of alias lacks its format:\n%s", out)
	}
	out = explain(t, "awsnodetemplates.spec.amiSelector")
	if !strings.Contains(out, "aws::owners") {
		t.Errorf("kubectl explain of AWSNodeTemplate amiSelector lacks the reserved keys:\n%s", out)
	}
}

// TestKubectlGetColumns: short names, the karpenter category and the
// printer columns (Role only in wide output) as upstream.
func TestKubectlGetColumns(t *testing.T) {
	u := parseManifest(t, baseV1)
	u.SetName("columns")
	if err := create(t, u); err != nil {
		t.Fatal(err)
	}
	// Listing a category prints every kind in it, each name qualified.
	if out := kubectl(t, "get", "karpenter"); !strings.Contains(out, "ec2nodeclass.karpenter.k8s.aws/columns") {
		t.Errorf("kubectl get karpenter does not list the EC2NodeClass:\n%s", out)
	}
	for _, resource := range []string{"ec2nc", "ec2ncs", "ec2nodeclasses"} {
		out := kubectl(t, "get", resource)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if strings.Join(header, " ") != "NAME READY AGE" || !strings.Contains(out, "columns") {
			t.Errorf("kubectl get %s: header %v, want NAME READY AGE and the object:\n%s", resource, header, out)
		}
	}
	wide := kubectl(t, "get", "ec2nc", "columns", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(wide), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE ROLE" || !strings.HasSuffix(lines[1], "KarpenterNodeRole") {
		t.Errorf("kubectl get ec2nc -o wide:\n%s", wide)
	}
}
