package providers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/karpenter-go/karpenter/"

// imports are the project packages the non-test Go files under dir import
// (recursively when deep), by importing file.
func imports(t *testing.T, dir string, deep bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!deep || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				out[path] = append(out[path], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheContractIsALeaf: pkg/cloudprovider (the interface, errors,
// Provider and Bundle) imports no project package but the APIs and the
// scheduling types its methods carry, so any provider can implement it and
// nothing it imports can import a provider.
func TestTheContractIsALeaf(t *testing.T) {
	for file, ps := range imports(t, "../cloudprovider", false) {
		for _, p := range ps {
			if !strings.HasPrefix(p, "pkg/apis") && p != "pkg/scheduling" {
				t.Errorf("%s imports %s: the contract may import only pkg/apis/... and pkg/scheduling", file, p)
			}
		}
	}
}

// TestThePluginNamesNoProvider: kubectl-karpenter's packages reach providers
// only through this registry, so a provider added to All is planned and
// priced without a change there.
func TestThePluginNamesNoProvider(t *testing.T) {
	files := imports(t, "../kubectl", true)
	if len(files) == 0 {
		t.Fatal("no files found under pkg/kubectl")
	}
	for file, ps := range files {
		if strings.Contains(file, "internal/plantest") {
			continue // test fixtures, built on KWOK's catalog
		}
		for _, p := range ps {
			if strings.HasPrefix(p, "pkg/providers/") {
				t.Errorf("%s imports %s: pkg/kubectl reaches providers through pkg/providers only", file, p)
			}
		}
	}
}
