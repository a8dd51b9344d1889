package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/top"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

var (
	topPluginOnce sync.Once
	topPluginPath string
	topPluginErr  error
)

// topPlugin builds cmd/kubectl-karpenter once per test binary.
func topPlugin(t testing.TB) string {
	t.Helper()
	topPluginOnce.Do(func() {
		root, err := kit.RepoRoot()
		if err != nil {
			topPluginErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kubectl-karpenter-e2e-")
		if err != nil {
			topPluginErr = err
			return
		}
		topPluginPath = filepath.Join(dir, "kubectl-karpenter")
		cmd := exec.Command("go", "build", "-o", topPluginPath, "./cmd/kubectl-karpenter")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			topPluginErr = fmt.Errorf("go build ./cmd/kubectl-karpenter: %v\n%s", err, out)
		}
	})
	if topPluginErr != nil {
		t.Fatal(topPluginErr)
	}
	return topPluginPath
}

// tmuxTerm is a real terminal: a detached tmux session on its own server
// (its own socket), running sh.
type tmuxTerm struct {
	t    testing.TB
	sock string
}

func newTmux(t testing.TB, width, height int, env ...string) *tmuxTerm {
	t.Helper()
	// A short socket path: unix sockets are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "tmux-")
	if err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(dir, "s")}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-s", "top"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	tm.run(append(args, "sh")...)
	t.Cleanup(func() {
		_ = tm.cmd("kill-server").Run()
		os.RemoveAll(dir)
	})
	// Type nothing before the shell's prompt: keys typed earlier are echoed
	// first and the prompt lands in front of the command's output.
	tm.waitScreen(context.Background(), 30*time.Second, "the shell's prompt", func(s string) bool { return strings.TrimSpace(s) != "" })
	return tm
}

func (tm *tmuxTerm) cmd(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-u", "-S", tm.sock}, args...)...)
	env := []string{"LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMUX") && !strings.HasPrefix(e, "LANG=") && !strings.HasPrefix(e, "LC_ALL=") {
			env = append(env, e)
		}
	}
	c.Env = env
	return c
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := tm.cmd(args...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// typeLine types a shell command and Enter.
func (tm *tmuxTerm) typeLine(s string) {
	tm.t.Helper()
	tm.run("send-keys", "-t", "top", "-l", s)
	tm.run("send-keys", "-t", "top", "Enter")
}

func (tm *tmuxTerm) screen() string {
	tm.t.Helper()
	return tm.run("capture-pane", "-p", "-t", "top")
}

// waitScreen polls the screen until ok accepts it.
func (tm *tmuxTerm) waitScreen(ctx context.Context, timeout time.Duration, what string, ok func(string) bool) string {
	tm.t.Helper()
	var last string
	if err := poll(ctx, timeout, func() (bool, error) {
		last = tm.screen()
		return ok(last), nil
	}); err != nil {
		tm.t.Fatalf("%s not on screen within %s; screen:\n%s", what, timeout, last)
	}
	return last
}

func topNodeNames(t testing.TB, c client.Client) []string {
	t.Helper()
	l := &corev1.NodeList{}
	if err := c.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	return out
}

// showsFleet: the pool line counts n nodes and every node has its own row.
func showsFleet(screen, pool string, nodes []string) bool {
	if !strings.Contains(screen, fmt.Sprintf("▾ %s · %d node", pool, len(nodes))) {
		return false
	}
	for _, n := range nodes {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(n) + ` `).MatchString(screen) {
			return false
		}
	}
	return true
}

var statsLine = regexp.MustCompile(`top: (\d+) frames, redraw avg ([0-9.]+) ms, max ([0-9.]+) ms \(model\+render avg ([0-9.]+) ms, max ([0-9.]+) ms\), (\d+) nodes`)

// `kubectl karpenter top` in a real terminal (tmux, 160x50) on the local
// cluster with Karpenter: the pool and its nodes appear; a Deployment scaled
// up makes Karpenter launch nodes, which appear in the live frame without a
// keystroke; q quits with status 0 and the terminal is as it was before (tty
// settings, main screen). --once prints the same fleet and exits.
func TestKubectlTop(t *testing.T) {
	t.Parallel()
	bin := topPlugin(t)
	e := startProvisioning(t)
	dep := kit.Deployment("default", "web", 3, "1500m", "1Gi", false)
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 4), dep)
	e.waitRunning(t, 3, 3*time.Minute)
	before := topNodeNames(t, e.Client)

	// --once, through a pipe.
	cmd := exec.Command(bin, "top", "--once", "--kubeconfig", e.Kubeconfig)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	once := string(out)
	if !showsFleet(once, "default", before) {
		t.Fatalf("top --once does not show the pool and its %d nodes %v:\n%s", len(before), before, once)
	}
	// 3 pods of 1.5 cpu: 4.5 cpu requested in all.
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^TOTAL · %d nodes? .* 4\.5/`, len(before))).MatchString(once) || strings.Contains(once, "≥") || strings.Contains(once, " ?\n") {
		t.Fatalf("top --once: want a total of %d priced nodes with 4.5 cpu requested:\n%s", len(before), once)
	}
	t.Logf("top --once:\n%s", once)

	// Live, in tmux.
	tm := newTmux(t, 160, 50, "KUBECONFIG="+e.Kubeconfig)
	tm.typeLine(`echo "stty before: $(stty -g)"; ` + bin + ` top --stats; echo "top exited $?"; echo "stty after: $(stty -g)"`)
	tm.waitScreen(e.ctx, time.Minute, "the pool and its nodes", func(s string) bool {
		return strings.Contains(s, "q quits") && showsFleet(s, "default", before)
	})

	// Scale up: Karpenter launches nodes, top shows them as they come.
	if err := e.Client.Patch(e.ctx, dep, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"replicas":8}}`))); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To[int32](8)
	e.waitRunning(t, 8, 3*time.Minute)
	after := topNodeNames(t, e.Client)
	if len(after) <= len(before) {
		t.Fatalf("scaling 3 -> 8 pods of 1.5 cpu launched no node: %v", after)
	}
	screen := tm.waitScreen(e.ctx, time.Minute, fmt.Sprintf("the %d nodes after scaling up", len(after)), func(s string) bool {
		// 8 pods of 1.5 cpu: 12 cpu requested.
		return showsFleet(s, "default", after) && regexp.MustCompile(fmt.Sprintf(`(?m)^TOTAL · %d nodes .* 12/`, len(after))).MatchString(s)
	})
	t.Logf("live frame after scaling up:\n%s", strings.TrimRight(screen, "\n"))

	// A smaller terminal (SIGWINCH): the frame fits it, the pool cut short.
	tm.run("resize-window", "-t", "top", "-x", "70", "-y", "8")
	screen = tm.waitScreen(e.ctx, 30*time.Second, "the frame fitted to 70x8", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 8 && regexp.MustCompile(`(?m)^  … \d+ more$`).MatchString(s) && strings.HasPrefix(lines[7], "TOTAL")
	})
	for _, l := range strings.Split(screen, "\n") {
		if n := len([]rune(l)); n > 70 {
			t.Fatalf("a %d-column line in a 70-column terminal:\n%s", n, screen)
		}
	}
	t.Logf("live frame at 70x8:\n%s", strings.TrimRight(screen, "\n"))
	tm.run("resize-window", "-t", "top", "-x", "160", "-y", "50")

	tm.run("send-keys", "-t", "top", "q")
	screen = tm.waitScreen(e.ctx, 30*time.Second, "top's exit", func(s string) bool {
		return regexp.MustCompile(`(?m)^stty after: \S+$`).MatchString(s)
	})
	// The command line typed contains these words too: only whole output lines count.
	if !regexp.MustCompile(`(?m)^top exited 0$`).MatchString(screen) {
		t.Fatalf("top did not exit 0 on q:\n%s", screen)
	}
	if strings.Contains(screen, "q quits") {
		t.Fatalf("the live frame is still on screen after q (alternate screen not left):\n%s", screen)
	}
	sttyBefore := regexp.MustCompile(`(?m)^stty before: (\S+)$`).FindStringSubmatch(screen)
	sttyAfter := regexp.MustCompile(`(?m)^stty after: (\S+)$`).FindStringSubmatch(screen)
	if sttyBefore == nil || sttyAfter == nil || sttyBefore[1] != sttyAfter[1] {
		t.Fatalf("terminal settings not restored (before %v, after %v):\n%s", sttyBefore, sttyAfter, screen)
	}
	t.Logf("after q:\n%s", strings.TrimRight(screen, "\n"))
	m := statsLine.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no --stats line after exit:\n%s", screen)
	}
	t.Logf("live view: %s frames, redraw avg %s ms, max %s ms (model+render avg %s ms, max %s ms), %s nodes", m[1], m[2], m[3], m[4], m[5], m[6])
}

// BenchmarkKubectlTop200Nodes: `kubectl karpenter top` on the local cluster
// with 200 KWOK nodes in two NodePools and 1,000 running pods (then 1,500: a
// burst of pod events while it watches). Reports
//   - ms/frame: one redraw (frame from the informer-fed model + render for a
//     160x50 terminal), in process, fed by the same watches as the binary;
//   - live-avg-ms/frame and live-max-ms/frame: the binary's own --stats in a
//     real terminal (tmux, 160x50), the write to the terminal included, and
//     live-render-*: the same redraws without the write;
//   - once-peak-MB: the peak RSS of `top --once` (the informers' slim caches).
//
// Run it with
//
//	go test ./test/e2e -run '^$' -bench KubectlTop200Nodes -benchtime 1x -timeout 20m
func BenchmarkKubectlTop200Nodes(b *testing.B) {
	bin := topPlugin(b)
	c := localcluster.Start(b)
	ctx := context.Background()
	if err := kit.InstallCRDs(ctx, c.Client); err != nil {
		b.Fatal(err)
	}
	// NodePools only for their names and limits: no Karpenter runs, the nodes
	// are made here, as KWOK nodes carrying Karpenter's labels.
	for _, name := range []string{"batch", "web"} {
		if err := c.Client.Create(ctx, kit.DefaultNodePool(name, "default", 8)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		pool, zone := "web", fmt.Sprintf("test-zone-%c", 'a'+i%3)
		if i%4 == 0 {
			pool = "batch"
		}
		name := fmt.Sprintf("bench-%03d", i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{localcluster.FakeNodeAnnotation: "fake"}, Labels: map[string]string{
				corev1.LabelHostname: name, v1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: "c-4x-amd64-linux",
				v1.CapacityTypeLabelKey: v1.CapacityTypeSpot, corev1.LabelTopologyZone: zone, "eks-node-viewer/instance-price": "0.0762",
			}},
			Spec: corev1.NodeSpec{ProviderID: "kwok://" + name},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			},
		}
		if err := c.Client.Create(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	dep := kit.Deployment("default", "bench", 1000, "100m", "128Mi", false)
	if err := c.Client.Create(ctx, dep); err != nil {
		b.Fatal(err)
	}
	waitPodsRunning := func(n int) {
		var last *kit.Counts
		if err := poll(ctx, 5*time.Minute, func() (bool, error) {
			cnt, err := kit.Count(ctx, c.Client, "default")
			last = cnt
			return err == nil && cnt.Running == n && cnt.Pods == n, err
		}); err != nil {
			b.Fatalf("%d pods not running: %+v (%v)", n, last, err)
		}
	}
	waitPodsRunning(1000)

	// --once: every node, and the memory it takes.
	once := exec.Command(bin, "top", "--once", "--kubeconfig", c.Kubeconfig)
	out, err := once.Output()
	if err != nil {
		b.Fatalf("top --once: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "TOTAL · 200 nodes") {
		b.Fatalf("top --once on 200 nodes:\n%s", out)
	}
	peakMB := float64(once.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024

	// In process: the model fed by the same watches, one redraw per iteration.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := top.NewModel(top.PriceOf)
	w, err := top.Watch(wctx, c.Config, m, func() {})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.WaitSynced(wctx); err != nil {
		b.Fatal(err)
	}
	const frames = 500
	start := time.Now()
	var lines []string
	for i := 0; i < frames; i++ {
		lines = top.Render(m.Frame(time.Now()), top.Options{Width: 160, Height: 50, Live: true})
	}
	perFrame := time.Since(start) / frames
	if len(lines) != 50 || !strings.Contains(strings.Join(lines, "\n"), "more") {
		b.Fatalf("a 200-node frame for 160x50 should fill it and cut pools:\n%s", strings.Join(lines, "\n"))
	}

	// The binary in a real terminal, through a burst of 500 new pods.
	tm := newTmux(b, 160, 50, "KUBECONFIG="+c.Kubeconfig)
	tm.typeLine(bin + ` top --stats; echo "top exited $?"`)
	tm.waitScreen(ctx, time.Minute, "200 nodes", func(s string) bool {
		return strings.Contains(s, "200 nodes in 2 nodepools") && strings.Contains(s, "… ") && strings.Contains(s, "TOTAL · 200 nodes")
	})
	if err := c.Client.Patch(ctx, dep, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"replicas":1500}}`))); err != nil {
		b.Fatal(err)
	}
	waitPodsRunning(1500)
	// 1,500 pods of 100m: 150 cpu requested.
	tm.waitScreen(ctx, time.Minute, "the 1,500 pods' requests", func(s string) bool {
		return regexp.MustCompile(`(?m)^TOTAL · 200 nodes .* 150/800`).MatchString(s)
	})
	tm.run("send-keys", "-t", "top", "q")
	screen := tm.waitScreen(ctx, 30*time.Second, "top's exit", func(s string) bool {
		return regexp.MustCompile(`(?m)^top exited \d+$`).MatchString(s)
	})
	st := statsLine.FindStringSubmatch(screen)
	if st == nil || !regexp.MustCompile(`(?m)^top exited 0$`).MatchString(screen) {
		b.Fatalf("no --stats line or a failed exit:\n%s", screen)
	}
	var liveAvg, liveMax, renderAvg, renderMax float64
	fmt.Sscan(st[2], &liveAvg)
	fmt.Sscan(st[3], &liveMax)
	fmt.Sscan(st[4], &renderAvg)
	fmt.Sscan(st[5], &renderMax)
	b.ReportMetric(float64(perFrame.Microseconds())/1000, "ms/frame")
	b.ReportMetric(liveAvg, "live-avg-ms/frame")
	b.ReportMetric(liveMax, "live-max-ms/frame")
	b.ReportMetric(renderAvg, "live-render-avg-ms")
	b.ReportMetric(renderMax, "live-render-max-ms")
	b.ReportMetric(peakMB, "once-peak-MB")
	b.Logf("200 nodes, 1,000 -> 1,500 pods: in-process redraw %.2f ms/frame; live binary %s frames, redraw avg %s ms, max %s ms (model+render avg %s ms, max %s ms); top --once peak RSS %.0f MB",
		float64(perFrame.Microseconds())/1000, st[1], st[2], st[3], st[4], st[5], peakMB)
}
