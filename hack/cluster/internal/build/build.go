// Package build compiles the control-plane multi-call binary from the Go module
// proxy and caches it under bin/ keyed by what went into it, so that a second
// build with the same versions does nothing.
package build

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Components are the names the multi-call binary answers to; each gets a symlink.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// Options says where the hack/cluster module is and where binaries go.
type Options struct {
	ModuleDir string    // the hack/cluster module
	BinDir    string    // the repository's bin/
	CacheDir  string    // optional machine-wide cache shared by clones; "" disables it
	Out       io.Writer // progress
}

// Versions reads the pinned versions of the components from go.mod.
func Versions(moduleDir string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(moduleDir, "go.mod"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := map[string]string{
		"k8s.io/kubernetes":         "kubernetes",
		"go.etcd.io/etcd/server/v3": "etcd",
		"sigs.k8s.io/kwok":          "kwok",
	}
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 {
			if name, ok := want[fields[0]]; ok {
				out[name] = fields[1]
			}
		}
	}
	for _, name := range want {
		if out[name] == "" {
			return nil, fmt.Errorf("%s/go.mod does not pin %s", moduleDir, name)
		}
	}
	return out, sc.Err()
}

// Key names a build: the component versions plus a digest of every file that
// decides the binary's content (go.mod, go.sum and the multi-call sources).
func Key(moduleDir string) (string, error) {
	v, err := Versions(moduleDir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	files := []string{"go.mod", "go.sum"}
	srcs, _ := filepath.Glob(filepath.Join(moduleDir, "k8s", "*.go"))
	sort.Strings(srcs)
	for _, s := range srcs {
		rel, _ := filepath.Rel(moduleDir, s)
		files = append(files, rel)
	}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(moduleDir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("kubernetes-%s_etcd-%s_kwok-%s_%s", v["kubernetes"], v["etcd"], v["kwok"], hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// Dir is where the binaries of one key live: bin/k8s/<key>.
func Dir(binDir, key string) string { return filepath.Join(binDir, "k8s", key) }

// CurrentLink is the stable path other tools use: bin/k8s/current -> <key>.
func CurrentLink(binDir string) string { return filepath.Join(binDir, "k8s", "current") }

// Ensure builds the binaries unless the current key is already built, and points
// bin/k8s/current at them.
func Ensure(o Options) (string, error) {
	key, err := Key(o.ModuleDir)
	if err != nil {
		return "", err
	}
	dir := Dir(o.BinDir, key)
	if complete(dir) {
		fmt.Fprintf(o.Out, "control plane %s: up to date in %s\n", key, dir)
		return dir, link(o.BinDir, key)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	target := filepath.Join(dir, "k8s")
	cached := ""
	if o.CacheDir != "" {
		cached = filepath.Join(o.CacheDir, key, "k8s")
	}
	if cached != "" && fileExists(cached) {
		fmt.Fprintf(o.Out, "control plane %s: copying from machine cache %s\n", key, cached)
		if err := copyFile(cached, target); err != nil {
			return "", err
		}
	} else {
		if err := compile(o, key, target); err != nil {
			return "", err
		}
		if cached != "" {
			// Best effort: another clone on this machine (CI's fresh checkout) reuses it.
			if err := os.MkdirAll(filepath.Dir(cached), 0o755); err == nil {
				if err := copyFile(target, cached); err != nil {
					fmt.Fprintf(o.Out, "warning: could not fill machine cache: %v\n", err)
				}
			}
		}
	}
	for _, c := range Components {
		p := filepath.Join(dir, c)
		_ = os.Remove(p)
		if err := os.Symlink("k8s", p); err != nil {
			return "", err
		}
	}
	return dir, link(o.BinDir, key)
}

func compile(o Options, key, target string) error {
	v, err := Versions(o.ModuleDir)
	if err != nil {
		return err
	}
	kv := v["kubernetes"]
	major, minor := splitVersion(kv)
	stamp := map[string]string{
		"gitVersion":   kv,
		"gitMajor":     major,
		"gitMinor":     minor,
		"gitTreeState": "clean",
		"buildDate":    time.Now().UTC().Format(time.RFC3339),
	}
	var ld []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for k, val := range stamp {
			ld = append(ld, fmt.Sprintf("-X %s.%s=%s", pkg, k, val))
		}
	}
	ld = append(ld, "-s", "-w") // no symbol tables: smaller binary, faster link
	sort.Strings(ld[:len(ld)-2])
	tmp := target + ".tmp"
	cmd := exec.Command("go", "build", "-ldflags", strings.Join(ld, " "), "-o", tmp, "./k8s")
	cmd.Dir = o.ModuleDir
	cmd.Stdout, cmd.Stderr = o.Out, o.Out
	fmt.Fprintf(o.Out, "building control plane %s (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok in one binary); about 10 minutes cold on 2 cores\n", key)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(o.Out, "  still building... %s elapsed\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	err = cmd.Run()
	close(done)
	if err != nil {
		return fmt.Errorf("go build ./k8s in %s: %w", o.ModuleDir, err)
	}
	fmt.Fprintf(o.Out, "built %s in %s\n", target, time.Since(start).Round(time.Second))
	return os.Rename(tmp, target)
}

func splitVersion(v string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return "", ""
	}
	return parts[0], parts[1]
}

func complete(dir string) bool {
	if !fileExists(filepath.Join(dir, "k8s")) {
		return false
	}
	for _, c := range Components {
		if _, err := os.Lstat(filepath.Join(dir, c)); err != nil {
			return false
		}
	}
	return true
}

func link(binDir, key string) error {
	cur := CurrentLink(binDir)
	if target, err := os.Readlink(cur); err == nil && target == key {
		return nil
	}
	tmp := cur + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(key, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, cur)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
