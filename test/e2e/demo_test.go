package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// The `make run` smoke tests: the demo binary runs as `make run DEMO_EXIT=1` would
// (with three replicas and its own state directory) and must exit 0, which it does only
// once the scale-up had every pod Running and the scale-down removed every node.

func runDemo(t *testing.T, provider string, extraArgs ...string) (string, error) {
	t.Helper()
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "demo")
	build := exec.Command("go", "build", "-o", bin, "./cmd/demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/demo: %v\n%s", err, out)
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	args := append([]string{"-cloud-provider=" + provider, "-replicas=3", "-node-registration-delay=1s", "-budget=100%", "-state-dir=" + state}, extraArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DEMO_EXIT=1")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(state, "controller-node", "*.log"))
		for _, f := range logs {
			if log, rerr := os.ReadFile(f); rerr == nil {
				lines := strings.Split(string(log), "\n")
				t.Logf("last lines of %s:\n%s", filepath.Base(f), strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	}
	return string(out), err
}

func TestDemoExitKWOK(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, err := runDemo(t, "kwok")
	if err != nil || !strings.Contains(out, "DEMO_EXIT: scale-up and scale-down succeeded") {
		t.Fatalf("demo (kwok, DEMO_EXIT=1): %v\n%s", err, out)
	}
	checkInstalledThroughChartsAndImage(t, out)
	t.Logf("make run DEMO_EXIT=1 (kwok, 3 replicas) took %s", time.Since(start).Round(time.Second))
}

// TestDemoExitAWS: the AWS path end to end: the emulator in-process, Karpenter
// launching through CreateFleet with launch templates whose user data the emulator
// reads to register the Nodes, instances terminated on scale-down.
func TestDemoExitAWS(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, err := runDemo(t, "aws")
	if err != nil || !strings.Contains(out, "DEMO_EXIT: scale-up and scale-down succeeded") || !strings.Contains(out, "EC2NodeClass default") {
		t.Fatalf("demo (aws, DEMO_EXIT=1): %v\n%s", err, out)
	}
	checkInstalledThroughChartsAndImage(t, out)
	if !strings.Contains(out, "--set cloudProvider=aws --set settings.clusterName=karpenter-demo --set settings.interruptionQueue=karpenter-demo") {
		t.Errorf("the demo did not render the chart with the aws provider, cluster name and interruption queue:\n%s", out)
	}
	t.Logf("make run CLOUD_PROVIDER=aws DEMO_EXIT=1 (3 replicas) took %s", time.Since(start).Round(time.Second))
}

// checkInstalledThroughChartsAndImage: make run installs both charts with
// helm upgrade --install, the chart's image pinned to the digest of the image
// built from source, and the controller's pod leads from a runc container
// (CI installs Debian's runc and runs as root, so auto picks runc).
func checkInstalledThroughChartsAndImage(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"helm upgrade --install karpenter-crd charts/karpenter-crd",
		"helm upgrade --install karpenter charts/karpenter",
		"--set controller.image.digest=sha256:",
		"leads: runc container ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestDemoExitNonZeroOnBadProvider(t *testing.T) {
	t.Parallel()
	out, err := runDemo(t, "gcp")
	var exit *exec.ExitError
	if err == nil || !errorsAs(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, `-cloud-provider "gcp"`) {
		t.Fatalf("demo with an unknown provider: %v\n%s", err, out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}
