package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// Module is the scratch module that pins upstream's release: a copy of
// hack/conformance/upstream in bin/conformance, where the suites are built.
type Module struct {
	// Dir is bin/conformance.
	Dir string
	// Toolchain is the Go toolchain upstream's go.mod asks for (e.g. go1.26.9).
	Toolchain string
	// Version is the pinned sigs.k8s.io/karpenter version.
	Version string
	src     string
}

var (
	goLine      = regexp.MustCompile(`(?m)^go (\S+)$`)
	requireLine = regexp.MustCompile(`(?m)^require sigs\.k8s\.io/karpenter (\S+)$`)
)

// OpenModule reads hack/conformance/upstream under the repository root.
func OpenModule(root string) (*Module, error) {
	src := filepath.Join(root, "hack", "conformance", "upstream")
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return nil, err
	}
	g, r := goLine.FindSubmatch(mod), requireLine.FindSubmatch(mod)
	if g == nil || r == nil {
		return nil, fmt.Errorf("%s/go.mod: want a `go` line and `require sigs.k8s.io/karpenter <version>` on its own line", src)
	}
	return &Module{Dir: filepath.Join(root, "bin", "conformance"), Toolchain: "go" + string(g[1]), Version: string(r[1]), src: src}, nil
}

// Suites are upstream's suites this harness knows how to run.
var Suites = []string{"regression", "performance", "disruption", "dra"}

// Build compiles upstream's test/suites/<suite> into bin/conformance/<suite>.test,
// unless a build of the same pinned module is there already. The first build
// downloads the toolchain and upstream's dependencies through the module proxy
// (a few minutes on two cores); later ones are a stat. Concurrent callers (test
// binaries running in parallel) wait on a file lock.
func (m *Module) Build(suite string) (string, error) {
	if !knownSuite(suite) {
		return "", fmt.Errorf("unknown suite %q (known: %s)", suite, strings.Join(Suites, ", "))
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(m.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	mod, err := os.ReadFile(filepath.Join(m.src, "go.mod"))
	if err != nil {
		return "", err
	}
	sum, err := os.ReadFile(filepath.Join(m.src, "go.sum"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(mod)
	h.Write(sum)
	h.Write([]byte(suite))
	stamp := hex.EncodeToString(h.Sum(nil))[:16]
	bin := filepath.Join(m.Dir, suite+".test")
	stampFile := bin + ".stamp"
	if got, err := os.ReadFile(stampFile); err == nil && string(got) == stamp {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "go.mod"), mod, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "go.sum"), sum, 0o644); err != nil {
		return "", err
	}
	if _, err := m.goCmd("test", "-c", "-vet=off", "-o", bin+".tmp", "sigs.k8s.io/karpenter/test/suites/"+suite); err != nil {
		return "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	return bin, os.WriteFile(stampFile, []byte(stamp), 0o644)
}

// UpstreamDir is where the module proxy unpacked upstream's release (its CRDs
// and testdata are read from there).
func (m *Module) UpstreamDir() (string, error) {
	out, err := m.goCmd("list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter")
	return strings.TrimSpace(out), err
}

// goCmd runs the go command in the scratch module with upstream's toolchain.
// GOFLAGS=-mod=mod lets it record the test-only dependencies' sums in the
// scratch copy of go.sum (the committed one already holds upstream's).
func (m *Module) goCmd(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+m.Toolchain, "GOFLAGS=-mod=mod", "GOWORK=off")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("GOTOOLCHAIN=%s go %s (in %s): %v\n%s", m.Toolchain, strings.Join(args, " "), m.Dir, err, stderr.String())
	}
	return out.String(), nil
}

func knownSuite(s string) bool {
	for _, k := range Suites {
		if k == s {
			return true
		}
	}
	return false
}
