package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeModule(t *testing.T, dir, etcd string) {
	t.Helper()
	gomod := "module x\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 " + etcd + "\n\tk8s.io/kubernetes v1.37.2\n\tsigs.k8s.io/kwok v0.8.0\n)\n"
	if err := os.MkdirAll(filepath.Join(dir, "k8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"go.mod": gomod, "go.sum": "", "k8s/main.go": "package main\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKeyNamesVersionsAndChangesWithInputs(t *testing.T) {
	dir := t.TempDir()
	writeModule(t, dir, "v3.7.0")
	k1, err := Key(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k1, "kubernetes-v1.37.2_etcd-v3.7.0_kwok-v0.8.0_") {
		t.Fatalf("key does not name the versions: %s", k1)
	}
	k2, _ := Key(dir)
	if k1 != k2 {
		t.Fatalf("key not stable: %s vs %s", k1, k2)
	}
	if err := os.WriteFile(filepath.Join(dir, "k8s", "main.go"), []byte("package main // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k3, _ := Key(dir)
	if k3 == k1 {
		t.Fatal("changing the multi-call source must change the key (and force a rebuild)")
	}
	writeModule(t, dir, "v3.7.1")
	k4, _ := Key(dir)
	if !strings.Contains(k4, "etcd-v3.7.1") {
		t.Fatalf("etcd bump not in key: %s", k4)
	}
}

func TestEnsureReusesACompleteBuild(t *testing.T) {
	mod, bin := t.TempDir(), t.TempDir()
	writeModule(t, mod, "v3.7.0")
	key, _ := Key(mod)
	dir := Dir(bin, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k8s"), []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range Components {
		if err := os.Symlink("k8s", filepath.Join(dir, c)); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	// The module has no real sources, so any attempt to compile would fail: success
	// proves nothing was rebuilt.
	got, err := Ensure(Options{ModuleDir: mod, BinDir: bin, Out: &out})
	if err != nil {
		t.Fatalf("Ensure rebuilt (or failed) although the build was complete: %v\n%s", err, out.String())
	}
	if got != dir || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("unexpected result %s / %q", got, out.String())
	}
	if target, err := os.Readlink(CurrentLink(bin)); err != nil || target != key {
		t.Fatalf("current link: %q %v", target, err)
	}
}

func TestEnsureCopiesFromMachineCache(t *testing.T) {
	mod, bin, cache := t.TempDir(), t.TempDir(), t.TempDir()
	writeModule(t, mod, "v3.7.0")
	key, _ := Key(mod)
	if err := os.MkdirAll(filepath.Join(cache, key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, key, "k8s"), []byte("cached-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	dir, err := Ensure(Options{ModuleDir: mod, BinDir: bin, CacheDir: cache, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kube-apiserver"))
	if err != nil || string(b) != "cached-binary" {
		t.Fatalf("kube-apiserver link does not reach the cached binary: %q %v", b, err)
	}
}
