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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
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

var statsLine = regexp.MustCompile(`top: (\d+) frames, redraw avg ([0-9.]+) ms, max ([0-9.]+) ms, (\d+) nodes`)

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
	if !strings.Contains(once, fmt.Sprintf("TOTAL · %d node", len(before))) || strings.Contains(once, "≥") || strings.Contains(once, " ?\n") {
		t.Fatalf("top --once: want a total of %d priced nodes:\n%s", len(before), once)
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
		return showsFleet(s, "default", after) && strings.Contains(s, fmt.Sprintf("TOTAL · %d nodes", len(after)))
	})
	t.Logf("live frame after scaling up:\n%s", screen)

	tm.run("send-keys", "-t", "top", "q")
	screen = tm.waitScreen(e.ctx, 30*time.Second, "top's exit", func(s string) bool {
		return strings.Contains(s, "stty after:")
	})
	if !strings.Contains(screen, "top exited 0") {
		t.Fatalf("top did not exit 0 on q:\n%s", screen)
	}
	if strings.Contains(screen, "q quits") {
		t.Fatalf("the live frame is still on screen after q (alternate screen not left):\n%s", screen)
	}
	sttyBefore := regexp.MustCompile(`stty before: (\S+)`).FindStringSubmatch(screen)
	sttyAfter := regexp.MustCompile(`stty after: (\S+)`).FindStringSubmatch(screen)
	if sttyBefore == nil || sttyAfter == nil || sttyBefore[1] != sttyAfter[1] {
		t.Fatalf("terminal settings not restored (before %v, after %v):\n%s", sttyBefore, sttyAfter, screen)
	}
	m := statsLine.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no --stats line after exit:\n%s", screen)
	}
	t.Logf("live view: %s frames, redraw avg %s ms, max %s ms, %s nodes", m[1], m[2], m[3], m[4])
}
