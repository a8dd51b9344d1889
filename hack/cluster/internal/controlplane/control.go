package controlplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Chaos for tests and for people trying the controller under failure: one
// component of a running cluster can be stopped, started, restarted, paused
// (SIGSTOP: the process holds its sockets but answers nothing, like a hung
// or partitioned server) and resumed (SIGCONT). `cluster up` serves these on
// a unix socket in the state directory, so `cluster restart apiserver` from
// another shell, or a test through pkg/test/localcluster, reaches the one
// process that owns the children (and re-parents the new child to itself, so
// that it still dies with the tool).

// ControlSocket is where `cluster up` listens for control requests.
func ControlSocket(stateDir string) string { return filepath.Join(stateDir, "control.sock") }

// Actions a control request can ask for.
var Actions = []string{"restart", "stop", "start", "pause", "resume"}

// aliases let people say "apiserver" for kube-apiserver and so on.
var aliases = map[string]string{
	"apiserver":          "kube-apiserver",
	"controller-manager": "kube-controller-manager",
	"kcm":                "kube-controller-manager",
	"scheduler":          "kube-scheduler",
}

// Component resolves a short name to the child's name.
func Component(name string) string {
	if full, ok := aliases[name]; ok {
		return full
	}
	return name
}

// Control performs one action on one component (by its name in the pid file
// or an alias). restart and start return once the new process runs, not once
// it serves: readiness is the caller's to wait for, since that is what a test
// of recovery measures.
func (c *Cluster) Control(action, component string) error {
	c.control.Lock()
	defer c.control.Unlock()
	name := Component(component)
	c.mu.Lock()
	idx := -1
	var names []string
	for i, p := range c.procs {
		names = append(names, p.name)
		if p.name == name {
			idx = i
		}
	}
	c.mu.Unlock()
	if idx < 0 {
		return fmt.Errorf("no component %q (have %s)", component, strings.Join(names, ", "))
	}
	c.mu.Lock()
	p := c.procs[idx]
	c.mu.Unlock()
	running := func() bool {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	switch action {
	case "pause", "resume":
		if !running() {
			return fmt.Errorf("%s is not running", name)
		}
		sig := syscall.SIGSTOP
		if action == "resume" {
			sig = syscall.SIGCONT
		}
		if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
			return fmt.Errorf("%s %s: %w", action, name, err)
		}
	case "stop":
		if !running() {
			return fmt.Errorf("%s is not running", name)
		}
		terminate(p)
	case "start", "restart":
		if action == "start" && running() {
			return fmt.Errorf("%s is already running", name)
		}
		if running() {
			terminate(p)
		}
		np, err := c.start(name, p.args)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.procs[idx] = np
		err = c.writePIDs()
		c.mu.Unlock()
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown action %q (want one of %s)", action, strings.Join(Actions, ", "))
	}
	fmt.Fprintf(c.cfg.Out, "%s %s: done\n", action, name)
	return nil
}

// ServeControl answers control requests on ControlSocket until ctx ends. A
// request is one line "ACTION COMPONENT"; the answer one line, "ok" or
// "error: ...".
func (c *Cluster) ServeControl(ctx context.Context) error {
	path := ControlSocket(c.cfg.StateDir)
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
		os.Remove(path)
	}()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go c.handle(conn)
		}
	}()
	return nil
}

func (c *Cluster) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		fmt.Fprintf(conn, "error: want \"ACTION COMPONENT\", got %q\n", strings.TrimSpace(line))
		return
	}
	if err := c.Control(f[0], f[1]); err != nil {
		fmt.Fprintf(conn, "error: %v\n", err)
		return
	}
	fmt.Fprintln(conn, "ok")
}

// Request sends one control request to the `cluster up` of stateDir and
// returns its error, if any.
func Request(stateDir, action, component string) error {
	conn, err := net.DialTimeout("unix", ControlSocket(stateDir), 5*time.Second)
	if err != nil {
		return fmt.Errorf("no cluster answering in %s (is `cluster up` running?): %w", stateDir, err)
	}
	defer conn.Close()
	// A restart waits up to 10 s for the old process to stop.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s %s\n", action, component); err != nil {
		return err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", action, component, err)
	}
	reply = strings.TrimSpace(reply)
	if reply == "ok" {
		return nil
	}
	return errors.New(strings.TrimPrefix(reply, "error: "))
}
