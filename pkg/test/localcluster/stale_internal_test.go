package localcluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStaleTool: a source of the cluster tool changed after the build makes
// the tool stale, naming that file; sources older than the build do not.
func TestStaleTool(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "hack", "cluster", "internal", "controlplane", "controlplane.go")
	tool := filepath.Join(root, "bin", "cluster")
	for _, f := range []string{src, filepath.Join(root, "hack", "cluster", "go.mod"), tool} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "hack", "cluster", "cmd"), 0o755); err != nil {
		t.Fatal(err)
	}
	built := time.Now().Add(-time.Hour)
	touch := func(f string, at time.Time) {
		if err := os.Chtimes(f, at, at); err != nil {
			t.Fatal(err)
		}
	}
	touch(tool, built)
	touch(filepath.Join(root, "hack", "cluster", "go.mod"), built.Add(-time.Minute))
	touch(src, built.Add(-time.Minute))
	if newer, err := staleTool(root, tool); err != nil || newer != "" {
		t.Fatalf("sources older than the build: got %q, %v; want fresh", newer, err)
	}
	touch(src, built.Add(time.Minute))
	if newer, err := staleTool(root, tool); err != nil || newer != src {
		t.Fatalf("a source changed after the build: got %q, %v; want %s", newer, err, src)
	}
}
