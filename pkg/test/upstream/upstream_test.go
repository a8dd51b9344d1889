package upstream

import (
	"archive/zip"
	"os"
	"path/filepath"
	"testing"
)

// fakeModCache makes a module cache holding only the zip of
// example.com/Mod@v1.0.0 (an upper-case letter, to check the escaping).
func fakeModCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	dir := filepath.Join(cache, "cache", "download", "example.com", "!mod", "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{
		"example.com/Mod@v1.0.0/pkg/crds/a.yaml":     "a",
		"example.com/Mod@v1.0.0/pkg/crds/sub/b.yaml": "b",
		"example.com/Mod@v1.0.0/pkg/crdsx/c.yaml":    "c",
		"example.com/Mod@v1.0.0/go.mod":              "module example.com/Mod\n",
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", cache)
	t.Setenv("GOFLAGS", "-mod=mod")
	return cache
}

func TestDirUnzipsOnlyTheDirectoryIntoBin(t *testing.T) {
	fakeModCache(t)
	root := t.TempDir()
	got, err := Dir(root, "example.com/Mod", "v1.0.0", "pkg/crds")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "bin", "upstream", "example.com", "!mod@v1.0.0", "pkg", "crds")
	if got != want {
		t.Fatalf("Dir = %s, want %s", got, want)
	}
	for name, body := range map[string]string{"a.yaml": "a", "sub/b.yaml": "b"} {
		data, err := os.ReadFile(filepath.Join(got, name))
		if err != nil || string(data) != body {
			t.Errorf("%s: %q, %v; want %q", name, data, err, body)
		}
	}
	if _, err := os.Stat(filepath.Join(got, "c.yaml")); err == nil {
		t.Errorf("a file of the sibling directory pkg/crdsx was unzipped too")
	}
	// The second call reads bin/, even with the zip gone.
	if err := os.RemoveAll(os.Getenv("GOMODCACHE")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(os.Getenv("GOMODCACHE"), 0o755); err != nil {
		t.Fatal(err)
	}
	again, err := Dir(root, "example.com/Mod", "v1.0.0", "pkg/crds/")
	if err != nil || again != want {
		t.Fatalf("second Dir = %s, %v; want %s from bin/", again, err, want)
	}
}

func TestDirPrefersTheUnpackedModule(t *testing.T) {
	cache := fakeModCache(t)
	unpacked := filepath.Join(cache, "example.com", "!mod@v1.0.0", "pkg", "crds")
	if err := os.MkdirAll(unpacked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unpacked, "a.yaml"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	got, err := Dir(root, "example.com/Mod", "v1.0.0", "pkg/crds")
	if err != nil || got != unpacked {
		t.Fatalf("Dir = %s, %v; want the module cache's %s", got, err, unpacked)
	}
	if _, err := os.Stat(filepath.Join(root, "bin")); err == nil {
		t.Errorf("bin/ was written although the module cache has the directory")
	}
}

func TestDirWithoutTheDirectoryFails(t *testing.T) {
	fakeModCache(t)
	if dir, err := Dir(t.TempDir(), "example.com/Mod", "v1.0.0", "no/such/dir"); err == nil {
		t.Fatalf("Dir = %s, want an error for a directory the module lacks", dir)
	}
}
