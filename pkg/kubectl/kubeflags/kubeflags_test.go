package kubeflags_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
)

func TestExtractTakesConnectionFlagsAnywhere(t *testing.T) {
	f, rest, err := kubeflags.Extract([]string{"--kubeconfig", "/k", "plan", "-n", "shop", "-f", "x.yaml", "--context=prod", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := kubeflags.Flags{Kubeconfig: "/k", Context: "prod", Namespace: "shop"}
	if f != want {
		t.Errorf("flags = %+v, want %+v", f, want)
	}
	if !reflect.DeepEqual(rest, []string{"plan", "-f", "x.yaml", "-o", "json"}) {
		t.Errorf("rest = %q", rest)
	}
	if _, _, err := kubeflags.Extract([]string{"plan", "--context"}); err == nil || !strings.Contains(err.Error(), "--context") {
		t.Errorf("missing value: err = %v", err)
	}
}

const kubeconfigTemplate = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://ADDR"}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team-a}
- name: other
  context: {cluster: c, user: u}
current-context: other
users:
- name: u
  user: {token: t}
`

func TestRESTConfigFollowsKubeconfigAndContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(kubeconfigTemplate, "ADDR", "10.1.2.3:6443")), 0o600); err != nil {
		t.Fatal(err)
	}
	f := kubeflags.Flags{Kubeconfig: path, Context: "ctx"}
	cfg, err := f.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.1.2.3:6443" || cfg.BearerToken != "t" {
		t.Errorf("host %q token %q", cfg.Host, cfg.BearerToken)
	}
	if ns := f.NamespaceOrDefault(); ns != "team-a" {
		t.Errorf("namespace of context ctx = %q, want team-a", ns)
	}
	if ns := (kubeflags.Flags{Kubeconfig: path}).NamespaceOrDefault(); ns != "default" {
		t.Errorf("namespace of the current context = %q, want default", ns)
	}
	t.Setenv("KUBECONFIG", path)
	if cfg, err := (kubeflags.Flags{}).RESTConfig(); err != nil || cfg.Host != "https://10.1.2.3:6443" {
		t.Errorf("KUBECONFIG: host %v err %v", cfg, err)
	}
}

func TestUnreachableClusterFailsNamingTheAddress(t *testing.T) {
	// A port nothing listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(kubeconfigTemplate, "ADDR", addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := (kubeflags.Flags{Kubeconfig: path}).RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	err = kubeflags.CheckReachable(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "https://"+addr) {
		t.Fatalf("err = %v, want one naming https://%s", err, addr)
	}
}
