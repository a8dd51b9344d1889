// Package upstream gives tests a directory of an upstream Go module's source
// (a chart, a set of CRDs) at a pinned version, so that differential tests
// compare this project with the exact release it replaces.
//
// The files come from the Go module cache: its unpacked copy of the module
// when there is one, else the module's zip (fetched through the Go module
// proxy with `go mod download` when the cache lacks it), of which only the
// asked directory is unzipped into bin/upstream/ under the repository root.
package upstream

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

// The AWS provider release this project replaces.
const (
	AWSProviderModule  = "github.com/aws/karpenter-provider-aws"
	AWSProviderVersion = "v1.15.2"
)

// Dir returns the local directory holding dir (a slash-separated path inside
// the module, e.g. "charts/karpenter") of module@version. root is the
// repository root; the unzipped copy is kept in root/bin/upstream/ so that
// later runs reuse it. A directory without any file is an error.
func Dir(root, module, version, dir string) (string, error) {
	dir = strings.Trim(dir, "/")
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return "", err
	}
	escaped, err := escapePath(module)
	if err != nil {
		return "", err
	}
	modDir := escaped + "@" + version
	if d := filepath.Join(cache, filepath.FromSlash(modDir), filepath.FromSlash(dir)); hasFile(d) {
		return d, nil
	}
	dest := filepath.Join(root, "bin", "upstream", filepath.FromSlash(modDir), filepath.FromSlash(dir))
	if hasFile(dest) {
		return dest, nil
	}
	zipPath := filepath.Join(cache, "cache", "download", filepath.FromSlash(escaped), "@v", version+".zip")
	if !exists(zipPath) {
		// Outside any module, so that ours is not touched. A module that asks
		// for a newer Go than ours makes `go mod download` fail after it has
		// fetched the zip: the exit status is not the verdict, the zip is.
		tmp, err := os.MkdirTemp("", "upstream-download-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, _ := cmd.CombinedOutput()
		if !exists(zipPath) {
			return "", fmt.Errorf("%s@%s: no %s, and go mod download did not fetch it:\n%s", module, version, zipPath, out)
		}
	}
	// A module zip's paths start with module@version/ (unescaped).
	if err := unzipDir(zipPath, module+"@"+version+"/"+dir+"/", dest); err != nil {
		return "", fmt.Errorf("unzipping %s of %s: %w", dir, zipPath, err)
	}
	return dest, nil
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// escapePath is the module cache's spelling of a module path: each upper-case
// letter becomes '!' and its lower-case form.
func escapePath(path string) (string, error) {
	var b strings.Builder
	for _, r := range path {
		switch {
		case r == '!' || r >= unicode.MaxASCII:
			return "", fmt.Errorf("module path %q: unsupported character %q", path, r)
		case unicode.IsUpper(r):
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// hasFile tells whether dir is a directory with at least one regular file.
func hasFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			return true
		}
	}
	return false
}

// unzipDir writes the zip's files under prefix to dest, keeping their paths
// below prefix, through a temporary directory renamed into place so that a
// concurrent or interrupted run never leaves half a directory.
func unzipDir(zipPath, prefix, dest string) error {
	r, err := zip.OpenReader(zipPath)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".unzip-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	n := 0
	for _, f := range r.File {
		if !strings.HasPrefix(f.Name, prefix) || strings.HasSuffix(f.Name, "/") || strings.Contains(f.Name, "..") {
			continue
		}
		target := filepath.Join(tmp, filepath.FromSlash(strings.TrimPrefix(f.Name, prefix)))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := extract(f, target); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no file under %s", prefix)
	}
	if err := os.Rename(tmp, dest); err != nil && !hasFile(dest) {
		return err
	}
	return nil
}

func extract(f *zip.File, target string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	return os.WriteFile(target, data, 0o644)
}
