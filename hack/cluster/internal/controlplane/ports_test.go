package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeHeld records every port of low-high except those in free as reserved
// by pid at time at.
func writeHeld(t *testing.T, path string, low, high, pid int, at time.Time, free map[int]bool) {
	t.Helper()
	var rs []reservation
	for p := low; p <= high; p++ {
		if !free[p] {
			rs = append(rs, reservation{port: p, pid: pid, at: at})
		}
	}
	if err := writeReservations(path, rs); err != nil {
		t.Fatal(err)
	}
}

// freeBlock finds a run of n consecutive ports in the picker's range that
// nothing listens on now.
func freeBlock(t *testing.T, n int) int {
	t.Helper()
	for low := portLow; low+n <= portHigh; low += n {
		ok := true
		for p := low; p < low+n && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return low
		}
	}
	t.Fatalf("no %d free consecutive ports in %d-%d", n, portLow, portHigh)
	return 0
}

func TestPortsReservedByALiveClusterAreNotDrawn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ports")
	low := freeBlock(t, 40)
	high := low + 39
	free := map[int]bool{low + 3: true, low + 17: true, low + 31: true}
	// Pid 1 is alive for as long as the machine is: another cluster's picker.
	writeHeld(t, path, low, high, 1, time.Now(), free)

	got, err := reservePorts(path, low, high, 3, os.Getpid(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if !free[p] {
			t.Errorf("drew port %d, reserved by a live cluster; only %v were open", p, free)
		}
	}
	if len(got) != 3 || got[0] == got[1] || got[1] == got[2] || got[0] == got[2] {
		t.Errorf("want 3 distinct ports, got %v", got)
	}

	// The draw is recorded: a further picker finds nothing left.
	if _, err := reservePorts(path, low, high, 1, 1, time.Now()); err == nil || !strings.Contains(err.Error(), "reserved by other clusters") {
		t.Errorf("a picker after the range was used up: want an error naming the reservations, got %v", err)
	}
}

func TestReservationsOfEndedOrOldClustersLapse(t *testing.T) {
	low := freeBlock(t, 20)
	high := low + 19
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		pid int
		at  time.Time
	}{
		"ended process":    {done.Process.Pid, time.Now()},
		"older than a TTL": {1, time.Now().Add(-reservationTTL - time.Minute)},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ports")
			writeHeld(t, path, low, high, c.pid, c.at, nil)
			got, err := reservePorts(path, low, high, 5, os.Getpid(), time.Now())
			if err != nil {
				t.Fatalf("every port was held by a lapsed reservation: %v", err)
			}
			rs, err := readReservations(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != len(got) {
				t.Errorf("the file keeps %d reservations, want only the %d new ones", len(rs), len(got))
			}
		})
	}
}

func TestPortsSomeoneListensOnAreNotDrawn(t *testing.T) {
	low := freeBlock(t, 10)
	var ls []net.Listener
	for p := low; p < low+8; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	got, err := reservePorts(filepath.Join(t.TempDir(), "ports"), low, low+9, 2, os.Getpid(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if p < low+8 {
			t.Errorf("drew port %d, which a listener holds", p)
		}
	}
}

func TestChildThatCannotBindReportsItsLogAndAConflict(t *testing.T) {
	state := t.TempDir()
	bin := filepath.Join(state, "bin")
	for _, d := range []string{bin, filepath.Join(state, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho starting\necho 'run.go:72] \"command failed\" err=\"listen tcp 127.0.0.1:20466: bind: address already in use\"'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "binder"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// An earlier run's lines in the same log are not this run's failure.
	if err := os.WriteFile(filepath.Join(state, "logs", "binder.log"), []byte("earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{cfg: Config{BinDir: bin, StateDir: state, Out: &strings.Builder{}}, exited: make(chan string, 1)}
	if err := c.spawn("binder"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	select {
	case msg := <-c.Exited():
		if !strings.Contains(msg, "bind: address already in use") || !strings.Contains(msg, "starting") {
			t.Errorf("the exit report should carry the child's last lines, got:\n%s", msg)
		}
		if strings.Contains(msg, "earlier run") {
			t.Errorf("the exit report quotes an earlier run's log:\n%s", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child's exit was not reported")
	}
	if !c.bindConflict.Load() {
		t.Error("a child that failed to bind its port is not recorded as a port conflict")
	}
}

// TestStartRetriesOnOtherPortsWhenAPortWasTaken replays the CI failure: a
// port drawn for kube-scheduler is bound by someone else before the scheduler
// starts. Start must come up on other ports instead of failing.
func TestStartRetriesOnOtherPortsWhenAPortWasTaken(t *testing.T) {
	binDir := filepath.Join("..", "..", "..", "..", "bin", "k8s", "current")
	if _, err := os.Stat(filepath.Join(binDir, "kube-scheduler")); err != nil {
		t.Fatalf("control plane binaries not built (%v): run `make cluster-bins` first", err)
	}
	thief, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	taken := thief.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if err == nil && calls == 1 {
			ports[3] = taken // kube-scheduler's
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })

	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{BinDir: binDir, StateDir: t.TempDir(), Out: &out})
	if err != nil {
		t.Fatalf("Start after a port conflict: %v\n%s", err, out.String())
	}
	defer c.Stop()
	if calls != 2 {
		t.Errorf("ports drawn %d times, want 2 (the conflict, then the retry)", calls)
	}
	if !strings.Contains(out.String(), "starting again on other ports") || !strings.Contains(out.String(), "address already in use") {
		t.Errorf("the retry and its cause are not reported:\n%s", out.String())
	}
}
