package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newSleeperCluster is a Cluster whose one child, "sleeper", is sleep(1):
// the control requests are exercised on real processes without Kubernetes.
func newSleeperCluster(t *testing.T) *Cluster {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	bin := filepath.Join(state, "bin")
	for _, d := range []string{bin, filepath.Join(state, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(sleep, filepath.Join(bin, "sleeper")); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{cfg: Config{BinDir: bin, StateDir: state}, exited: make(chan string, 1)}
	c.cfg.Out = &strings.Builder{}
	if err := c.spawn("sleeper", "600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.ServeControl(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// procState is the state letter of /proc/PID/stat (S sleeping, T stopped, Z zombie).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	return s[strings.LastIndexByte(s, ')')+2:][:1]
}

func waitState(t *testing.T, pid int, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := procState(t, pid)
		for _, w := range want {
			if got == w {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d in state %s, want one of %v", pid, got, want)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc of a real process
	}
}

func TestControlRestartReplacesTheProcessWithoutReportingAFailure(t *testing.T) {
	c := newSleeperCluster(t)
	old := c.PIDs()["sleeper"]
	if err := Request(c.cfg.StateDir, "restart", "sleeper"); err != nil {
		t.Fatal(err)
	}
	now := c.PIDs()["sleeper"]
	if now == old || now == 0 {
		t.Fatalf("pid %d after restart, was %d", now, old)
	}
	waitState(t, old, "gone", "Z")
	waitState(t, now, "S", "R")
	pids, err := os.ReadFile(PIDFile(c.cfg.StateDir))
	if err != nil || !strings.Contains(string(pids), fmt.Sprintf("sleeper %d", now)) {
		t.Fatalf("pid file %q does not name the new process %d (%v)", pids, now, err)
	}
	select {
	case msg := <-c.Exited():
		t.Fatalf("a requested restart was reported as a failure: %s", msg)
	default:
	}
}

func TestControlPauseResume(t *testing.T) {
	c := newSleeperCluster(t)
	pid := c.PIDs()["sleeper"]
	if err := Request(c.cfg.StateDir, "pause", "sleeper"); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T")
	if err := Request(c.cfg.StateDir, "resume", "sleeper"); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "S", "R")
}

func TestControlStopStart(t *testing.T) {
	c := newSleeperCluster(t)
	old := c.PIDs()["sleeper"]
	if err := Request(c.cfg.StateDir, "stop", "sleeper"); err != nil {
		t.Fatal(err)
	}
	waitState(t, old, "gone", "Z")
	if err := Request(c.cfg.StateDir, "stop", "sleeper"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("second stop: %v, want \"not running\"", err)
	}
	if err := Request(c.cfg.StateDir, "start", "sleeper"); err != nil {
		t.Fatal(err)
	}
	waitState(t, c.PIDs()["sleeper"], "S", "R")
	if err := Request(c.cfg.StateDir, "start", "sleeper"); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second start: %v, want \"already running\"", err)
	}
}

func TestControlErrorsNameWhatIsWrong(t *testing.T) {
	c := newSleeperCluster(t)
	if err := Request(c.cfg.StateDir, "restart", "apiserver"); err == nil || !strings.Contains(err.Error(), `no component "apiserver" (have sleeper)`) {
		t.Errorf("unknown component: %v", err)
	}
	if err := Request(c.cfg.StateDir, "explode", "sleeper"); err == nil || !strings.Contains(err.Error(), `unknown action "explode"`) {
		t.Errorf("unknown action: %v", err)
	}
	if err := Request(t.TempDir(), "restart", "sleeper"); err == nil || !strings.Contains(err.Error(), "is `cluster up` running?") {
		t.Errorf("no cluster: %v", err)
	}
	if got := Component("apiserver"); got != "kube-apiserver" {
		t.Errorf("alias apiserver = %q", got)
	}
}

func TestChildExitingOnItsOwnIsReported(t *testing.T) {
	c := newSleeperCluster(t)
	pid := c.PIDs()["sleeper"]
	if err := exec.Command("kill", "-9", fmt.Sprint(pid)).Run(); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-c.Exited():
		if !strings.Contains(msg, "sleeper exited") {
			t.Fatalf("exit report %q does not name the child", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a child killed from outside was not reported")
	}
}

// TestKWOKStagesHonourGracePeriod: terminating pods go at the end of their
// grace period, or at once as in upstream's end-to-end clusters when asked.
func TestKWOKStagesHonourGracePeriod(t *testing.T) {
	for _, c := range []struct {
		atOnce bool
		delay  string
	}{
		{false, "expressionFrom: '.metadata.deletionTimestamp'"},
		{true, `expressionFrom: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'`},
	} {
		path, err := writeKWOKStages(t.TempDir(), 0, c.atOnce)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{"name: node-initialize", "name: pod-ready", "name: pod-delete", c.delay} {
			if !strings.Contains(s, want) {
				t.Errorf("at once %t: stages lack %q", c.atOnce, want)
			}
		}
		if n := strings.Count(s, "name: pod-delete"); n != 1 {
			t.Errorf("at once %t: %d pod-delete stages, want 1", c.atOnce, n)
		}
	}
}

// TestKWOKHeartbeatFollowsTheLease: with node Leases longer than KWOK's
// 600-s heartbeat the stage's delay and jitter grow with them (a fleet's
// status patches); with the kubelet's 40 s it stays KWOK's own.
func TestKWOKHeartbeatFollowsTheLease(t *testing.T) {
	for _, c := range []struct {
		lease         int
		delay, jitter string
	}{
		{0, heartbeatDelay, heartbeatJitter},
		{600, heartbeatDelay, heartbeatJitter},
		{3600, "durationMilliseconds: 3600000", "jitterDurationMilliseconds: 3660000"},
	} {
		path, err := writeKWOKStages(t.TempDir(), c.lease, false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "name: node-heartbeat-with-lease")
		if i < 0 {
			t.Fatalf("lease %d: no heartbeat stage", c.lease)
		}
		stage := s[i:]
		if j := strings.Index(stage, "\n---"); j >= 0 {
			stage = stage[:j]
		}
		for _, want := range []string{"    " + c.delay + "\n", "    " + c.jitter + "\n"} {
			if !strings.Contains(stage, want) {
				t.Errorf("lease %d: heartbeat stage lacks %q:\n%s", c.lease, want, stage)
			}
		}
	}
}
