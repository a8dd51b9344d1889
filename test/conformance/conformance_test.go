package conformance_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karpenter-go/karpenter/pkg/test/controllernode"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
	"github.com/karpenter-go/karpenter/test/conformance"
)

var (
	suite       = flag.String("conformance.suite", "regression", "upstream suite to run: "+strings.Join(conformance.Suites, ", "))
	full        = flag.Bool("conformance.full", false, "run every spec of the suite (default: the fast subset, FastFocus)")
	focus       = flag.String("conformance.focus", "", "run only the specs whose full text matches this regular expression")
	skip        = flag.String("conformance.skip", "", "do not run the specs whose full text matches this regular expression")
	parallel    = flag.Int("conformance.parallel", 2, "specs run at once, each worker on its own cluster with its own controller")
	specTimeout = flag.Duration("conformance.spec-timeout", 20*time.Minute, "Ginkgo's timeout for one spec (upstream's Eventually waits up to 15 minutes)")
	outDir      = flag.String("conformance.out", "", "where each spec's output, report and controller log go (default bin/conformance/results/<suite>-<time>)")
)

// FastFocus is the subset `make test` runs: the regression suite's admission
// validation and CRD hash specs and its standalone NodeClaim lifecycle specs
// (a NodeClaim created by hand is launched, registers, propagates its spec,
// and is deleted through the termination finalizer), a few minutes in all.
// The registration-timeout spec waits 15 minutes by design and is left to
// `make conformance`.
const FastFocus = `^Integration (Validation|CRD Hash) |^NodeClaim StandaloneNodeClaim should (create|remove|delete a NodeClaim (from|if))`

// hostPortSpecs start something that binds a fixed port of this host (the
// Chaos specs run a controller-runtime manager of their own, whose metrics
// server takes :8080): two of them at once would fail each other, so they
// take turns.
var hostPortSpecs = regexp.MustCompile(`^Chaos `)

// TestUpstreamSuite runs an upstream suite's specs one by one against this
// controller on local clusters and fails on every spec that fails. Without
// flags it is the fast regression subset; `make conformance` runs a whole
// suite (SUITE=regression|performance|disruption|dra).
func TestUpstreamSuite(t *testing.T) {
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := conformance.OpenModule(root)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bin, err := mod.Build(*suite)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upstream %s suite of sigs.k8s.io/karpenter %s (%s): %s, ready after %s", *suite, mod.Version, mod.Toolchain, bin, time.Since(start).Round(time.Second))
	upstreamDir, err := mod.UpstreamDir()
	if err != nil {
		t.Fatal(err)
	}
	all, err := conformance.ListSpecs(bin)
	if err != nil {
		t.Fatal(err)
	}
	f := *focus
	if f == "" && !*full {
		f = FastFocus
	}
	specs, err := conformance.Select(all, f, *skip)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) == 0 {
		t.Fatalf("no spec of the %s suite's %d matches focus %q, skip %q", *suite, len(all), f, *skip)
	}
	out := *outDir
	if out == "" {
		out = filepath.Join(mod.Dir, "results", fmt.Sprintf("%s-%s", *suite, time.Now().UTC().Format("20060102T150405Z")))
	}
	karpenter := filepath.Join(t.TempDir(), "karpenter")
	if err := kit.Build(root, karpenter); err != nil {
		t.Fatal(err)
	}
	t.Logf("running %d of the suite's %d specs, %d at a time; output in %s", len(specs), len(all), *parallel, out)

	results := make([]conformance.Result, len(specs))
	next := make(chan int, len(specs))
	for i := range specs {
		next <- i
	}
	close(next)
	var mu, hostPort sync.Mutex
	done := 0
	t.Run("workers", func(t *testing.T) {
		for w := 0; w < min(*parallel, len(specs)); w++ {
			t.Run(fmt.Sprintf("worker-%d", w), func(t *testing.T) {
				t.Parallel()
				wk := &worker{id: w, karpenter: karpenter, upstreamDir: upstreamDir}
				wk.up(t)
				for i := range next {
					s := specs[i]
					dir := filepath.Join(out, fmt.Sprintf("%03d-%s", i, slug(s.Where())))
					from := wk.logSizes()
					if hostPortSpecs.MatchString(s.Text) {
						hostPort.Lock()
					}
					r := conformance.RunSpec(context.Background(), bin, s, wk.c.Kubeconfig, dir, *specTimeout)
					if hostPortSpecs.MatchString(s.Text) {
						hostPort.Unlock()
					}
					wk.copyLogs(t, from, filepath.Join(dir, "karpenter.log"))
					mu.Lock()
					results[i] = r
					done++
					n := done
					mu.Unlock()
					t.Logf("[%d/%d] %s %7s  %s (%s)%s", n, len(specs), r.Outcome, r.Duration.Round(100*time.Millisecond), s.Text, s.Where(), reason(r))
					// A failed spec may leave objects behind that the next
					// spec's clean-cluster check would trip on: start over.
					if r.Outcome == conformance.Fail {
						wk.down(t)
						wk.up(t)
					}
				}
			})
		}
	})
	table := conformance.Table(results)
	summary := conformance.Summary(*suite, results, len(all))
	if err := os.MkdirAll(out, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(out, "results.md"), []byte(fmt.Sprintf("%s\n\n%s\n%s\n", summary, table, environment(mod))), 0o644)
	}
	t.Logf("\n%s\n%s", table, summary)
	for _, r := range results {
		if r.Outcome == conformance.Fail {
			t.Errorf("FAIL %s (%s): %s [%s]; output in %s", r.Spec.Text, r.Spec.Where(), conformance.FirstLine(r.Message, 300), r.State, r.Dir)
		}
	}
}

// worker is one local cluster with our CRDs, our chart installed in kube-system as upstream's suites expect,
// and a controller node whose kubelet (this harness) runs the chart's
// controller pod as a process.
type worker struct {
	id          int
	karpenter   string
	upstreamDir string
	c           *localcluster.Cluster
	node        *controllernode.Node
}

func (w *worker) up(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w.c = localcluster.StartWith(t, localcluster.Options{
		// Upstream's suites configure the cluster's kube-scheduler with
		// their own profiles (a second one carrying default topology spread
		// constraints), at the path their specs look for in its arguments.
		SchedulerProfiles:   filepath.Join(w.upstreamDir, "test", "suites", "regression", "testdata", "kube-scheduler-config.yaml"),
		SchedulerConfigPath: "etc/kubernetes/karpenter-scheduler-config/kube-scheduler-config.yaml",
		// Upstream's KWOK clusters delete a terminating pod at once (their
		// pod-delete stage); a kubelet-like wait for the grace period made
		// specs that count nodes see replacements of pods that
		// kube-controller-manager evicted find no room, where upstream's
		// replacements find the evicted pods' room free.
		PodDeleteAtOnce: true,
	})
	if err := kit.InstallCRDs(ctx, w.c.Client); err != nil {
		t.Fatal(err)
	}
	w.node = &controllernode.Node{
		Name: "karpenter-control-plane", Client: w.c.Client, KubeClient: w.c.KubeClient, AdminKubeconfig: w.c.Kubeconfig,
		Binary: w.karpenter, Dir: filepath.Join(w.c.StateDir, "controller-node"), Logf: t.Logf,
		ServePodPorts: *suite == "performance",
	}
	if err := w.node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.mirrorScheduler(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conformance.InstallController(ctx, w.c.Client); err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.WaitControllerLeading(ctx, w.c.Client, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// mirrorScheduler posts kube-scheduler's mirror pod with its command line.
func (w *worker) mirrorScheduler(ctx context.Context) error {
	pids, err := w.c.ChildPIDs()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[localcluster.Scheduler]))
	if err != nil {
		return err
	}
	return w.node.MirrorPod(ctx, localcluster.Scheduler, strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"))
}

func (w *worker) down(t *testing.T) {
	w.node.Stop()
	if err := w.c.Stop(); err != nil {
		t.Log(err)
	}
}

// logSizes are the controller pods' log sizes now.
func (w *worker) logSizes() map[string]int64 {
	out := map[string]int64{}
	for _, f := range w.node.Logs() {
		if fi, err := os.Stat(f); err == nil {
			out[f] = fi.Size()
		}
	}
	return out
}

// copyLogs writes what the controller pods logged since from to path, each
// pod's lines under its name.
func (w *worker) copyLogs(t *testing.T, from map[string]int64, path string) {
	outf, err := os.Create(path)
	if err != nil {
		t.Log(err)
		return
	}
	defer outf.Close()
	for _, f := range w.node.Logs() {
		in, err := os.Open(f)
		if err != nil {
			continue
		}
		if fi, err := in.Stat(); err == nil && fi.Size() > from[f] {
			fmt.Fprintf(outf, "==> pod %s <==\n", strings.TrimSuffix(filepath.Base(f), ".log"))
			if _, err := in.Seek(from[f], io.SeekStart); err == nil {
				_, _ = io.Copy(outf, in)
			}
		}
		in.Close()
	}
}

func reason(r conformance.Result) string {
	if r.Outcome == conformance.Pass {
		return ""
	}
	msg := conformance.FirstLine(r.Message, 200)
	if r.Where != "" {
		msg += " at " + r.Where
	}
	return fmt.Sprintf("\n        %s: %s", r.State, msg)
}

func environment(mod *conformance.Module) string {
	return fmt.Sprintf("Environment: sigs.k8s.io/karpenter %s built with %s; local cluster (hack/cluster) with our CRDs; "+
		"our chart installed as release karpenter in kube-system (%s), its controller pod run as a process by the harness's kubelet on a tainted system node.",
		mod.Version, mod.Toolchain, strings.Join(conformance.ChartValues, " "))
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, s)
}
