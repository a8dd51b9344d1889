package env

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Upstream's AWS provider module: its pkg/apis/crds are the CRDs users of
// upstream Karpenter install.
const (
	UpstreamProviderModule  = "github.com/aws/karpenter-provider-aws"
	UpstreamProviderVersion = "v1.15.2"
)

// WithCRDDirectory installs the CRDs of dir instead of the project's.
func WithCRDDirectory(dir string) Option {
	return func(e *envtest.Environment) { e.CRDDirectoryPaths = []string{dir} }
}

// UpstreamCRDs writes the named files of upstream's pkg/apis/crds (e.g.
// "karpenter.sh_nodeoverlays.yaml") into a temporary directory and returns
// it, for an environment that serves upstream's schema to compare verdicts
// with. The files come from the module cache's zip of the provider module,
// fetched through the Go module proxy with `go mod download` when missing.
func UpstreamCRDs(t testing.TB, files ...string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	cache := strings.TrimSpace(string(out))
	if err != nil || cache == "" {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	zipPath := filepath.Join(cache, "cache", "download", filepath.FromSlash(UpstreamProviderModule), "@v", UpstreamProviderVersion+".zip")
	if _, err := os.Stat(zipPath); err != nil {
		// Outside any module, so that ours is not touched; the module asks for
		// a newer Go than ours, which is reported after the zip is fetched.
		cmd := exec.Command("go", "mod", "download", "-json", UpstreamProviderModule+"@"+UpstreamProviderVersion)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		msg, _ := cmd.CombinedOutput()
		if _, err := os.Stat(zipPath); err != nil {
			t.Fatalf("upstream's CRDs: no %s, and go mod download did not fetch it:\n%s", zipPath, msg)
		}
	}
	r, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := map[string]bool{}
	for _, f := range files {
		want[UpstreamProviderModule+"@"+UpstreamProviderVersion+"/pkg/apis/crds/"+f] = true
	}
	dir := t.TempDir()
	for _, f := range r.File {
		if !want[f.Name] {
			continue
		}
		delete(want, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range want {
		t.Fatalf("upstream's CRDs: %s not in %s", name, zipPath)
	}
	return dir
}
