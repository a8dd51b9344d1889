// Package localcluster runs the project's local cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and KWOK, see hack/cluster) for
// end-to-end tests: real Deployments create pods, the real scheduler binds them
// and KWOK's fake kubelets report nodes Ready and pods Running.
package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

// Cluster is a running local cluster.
type Cluster struct {
	Config     *rest.Config
	Client     client.Client
	KubeClient kubernetes.Interface
	Scheme     *runtime.Scheme
	Kubeconfig string
	StateDir   string
	Root       string

	cmd  *exec.Cmd
	done chan error
	// killed: Kill ended the tool on purpose, so its "signal: killed" exit is
	// what the test asked for, not a failure of Stop.
	killed atomic.Bool
}

// FakeNodeAnnotation marks the nodes KWOK runs.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Options change how the cluster runs, for the tests that ask.
type Options struct {
	// SchedulerMostAllocated: kube-scheduler packs pods onto the fullest
	// node that fits (`cluster up --scheduler-most-allocated`).
	SchedulerMostAllocated bool
	// SchedulerNoDefaultSpread: kube-scheduler without its system-default
	// topology spreading (`--scheduler-no-default-spread`): scoring it counts
	// every pod of the ReplicaSet on the candidate zones' nodes for each pod
	// scheduled, most of kube-scheduler's CPU in a large fleet.
	SchedulerNoDefaultSpread bool
	// SchedulerPercentageOfNodesToScore is kube-scheduler's
	// percentageOfNodesToScore (`--scheduler-percentage-of-nodes-to-score`,
	// 0 keeps its adaptive default): a fleet of identical KWOK nodes need not
	// have a third of its nodes scored for every pod.
	SchedulerPercentageOfNodesToScore int
	// SchedulerProfiles: kube-scheduler runs with the profiles of this
	// KubeSchedulerConfiguration file (`--scheduler-profiles`), its
	// configuration written at SchedulerConfigPath under the state
	// directory (`--scheduler-config-path`; empty: kube-scheduler.yaml).
	SchedulerProfiles   string
	SchedulerConfigPath string
	// Profiling serves pprof (`--profiling`) on kube-apiserver,
	// kube-controller-manager and kube-scheduler (their secure ports) and on
	// etcd (its client URL): a fleet benchmark reads where the control plane's
	// CPU goes.
	Profiling bool
	// NodeLeaseSeconds lengthens KWOK's node Leases (`--node-lease-seconds`,
	// 0 keeps 40 s) and NodeMonitorGracePeriod kube-controller-manager's
	// patience with them (`--node-monitor-grace-period`): at thousands of
	// nodes the renewals, one per node every 10 s, are most of the API
	// server's writes. Above 600 s KWOK's node status heartbeats (every 600 s
	// by default) come once a Lease duration too.
	NodeLeaseSeconds       int
	NodeMonitorGracePeriod time.Duration
	// PodDeleteAtOnce: KWOK removes terminating pods at once, as upstream
	// Karpenter's KWOK end-to-end clusters do (`--pod-delete-at-once`),
	// rather than at the end of their grace period.
	PodDeleteAtOnce bool
	// DisableControllers: kube-controller-manager controllers not to run
	// (`--kcm-disable-controllers`), e.g. "ttl", whose node annotations KWOK
	// never reads and which re-patches every node as the fleet grows.
	DisableControllers []string
	// AuditNodeClaims: kube-apiserver keeps an audit log of NodeClaim writes
	// (`--audit-nodeclaims`, AuditLogPath): its own time for each request.
	AuditNodeClaims bool
	// APIServerGOGC: kube-apiserver's GOGC (`--apiserver-gogc`, 0: Go's
	// default) and ClientNice: kube-scheduler, kube-controller-manager and
	// KWOK run that much nicer than the API server and etcd
	// (`--client-nice`). See hack/cluster's controlplane.Config.
	APIServerGOGC int
	ClientNice    int
}

// AuditLogPath is the audit log of a cluster started with AuditNodeClaims.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.StateDir, "logs", "audit.log") }

// Start runs `bin/cluster up` in a fresh state directory and waits until it is ready.
func Start(t testing.TB) *Cluster { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	root, err := env.Root()
	if err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(root, "bin", "cluster")
	if _, err := os.Stat(tool); err != nil {
		t.Fatalf("%s not found: run `make cluster-bins` first", tool)
	}
	if newer, err := staleTool(root, tool); err != nil {
		t.Fatal(err)
	} else if newer != "" {
		t.Fatalf("%s is older than %s (a flag it passes may be unknown to the old build): run `make cluster-bins` first", tool, newer)
	}
	if _, err := env.BinaryAssets(root); err != nil {
		t.Fatal(err)
	}
	state, err := os.MkdirTemp("", "localcluster-")
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(state, "ready")
	c := &Cluster{StateDir: state, Root: root, done: make(chan error, 1)}
	args := []string{"up", "--bin-dir", filepath.Join(root, "bin"), "--state-dir", state, "--ready-file", ready}
	if opts.SchedulerMostAllocated {
		args = append(args, "--scheduler-most-allocated")
	}
	if opts.SchedulerNoDefaultSpread {
		args = append(args, "--scheduler-no-default-spread")
	}
	if opts.SchedulerPercentageOfNodesToScore > 0 {
		args = append(args, "--scheduler-percentage-of-nodes-to-score", strconv.Itoa(opts.SchedulerPercentageOfNodesToScore))
	}
	if opts.SchedulerProfiles != "" {
		args = append(args, "--scheduler-profiles", opts.SchedulerProfiles)
	}
	if opts.SchedulerConfigPath != "" {
		args = append(args, "--scheduler-config-path", filepath.Join(state, opts.SchedulerConfigPath))
	}
	if opts.Profiling {
		args = append(args, "--profiling")
	}
	if opts.APIServerGOGC > 0 {
		args = append(args, "--apiserver-gogc", strconv.Itoa(opts.APIServerGOGC))
	}
	if opts.ClientNice > 0 {
		args = append(args, "--client-nice", strconv.Itoa(opts.ClientNice))
	}
	if opts.AuditNodeClaims {
		args = append(args, "--audit-nodeclaims")
	}
	if opts.NodeLeaseSeconds > 0 {
		args = append(args, "--node-lease-seconds", strconv.Itoa(opts.NodeLeaseSeconds))
	}
	if opts.PodDeleteAtOnce {
		args = append(args, "--pod-delete-at-once")
	}
	if len(opts.DisableControllers) > 0 {
		args = append(args, "--kcm-disable-controllers", strings.Join(opts.DisableControllers, ","))
	}
	if opts.NodeMonitorGracePeriod > 0 {
		args = append(args, "--node-monitor-grace-period", opts.NodeMonitorGracePeriod.String())
	}
	c.cmd = exec.Command(tool, args...)
	// A test binary that dies (killed, or its -timeout panic) takes its
	// clusters with it: the tool stops its children on SIGTERM.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	logf, err := os.Create(filepath.Join(state, "cluster.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping local cluster: %v", err)
		}
		if !t.Failed() {
			os.RemoveAll(state)
		} else {
			t.Logf("local cluster state and logs kept in %s", state)
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-c.done:
			c.done <- err
			log, _ := os.ReadFile(filepath.Join(state, "cluster.log"))
			t.Fatalf("local cluster exited before it was ready (%v):\n%s", err, log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("local cluster not ready after 3m; logs in %s", state)
		}
	}
	c.Kubeconfig = filepath.Join(state, "kubeconfig")
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	// Hold the credentials in memory: a file-backed client certificate makes
	// client-go start a goroutine that re-reads it every few seconds, and
	// that goroutine outlives the cluster, logging "Loading client cert
	// failed" once the state directory is gone.
	if err := rest.LoadTLSFiles(c.Config); err != nil {
		t.Fatal(err)
	}
	c.Config.QPS, c.Config.Burst = 500, 1000
	c.Scheme = runtime.NewScheme()
	for _, add := range env.SchemeBuilders {
		if err := add(c.Scheme); err != nil {
			t.Fatal(err)
		}
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: c.Scheme}); err != nil {
		t.Fatal(err)
	}
	if c.KubeClient, err = kubernetes.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	return c
}

// ChildPIDs are the control-plane processes the cluster tool recorded.
func (c *Cluster) ChildPIDs() (map[string]int, error) {
	return ReadPIDs(c.StateDir)
}

// PID of the cluster tool itself.
func (c *Cluster) PID() int { return c.cmd.Process.Pid }

// Kill sends SIGKILL to the cluster tool (not to its children, which must go
// by themselves: that is what a test of orphans checks).
func (c *Cluster) Kill() error {
	c.killed.Store(true)
	return syscall.Kill(c.PID(), syscall.SIGKILL)
}

// Stop sends SIGTERM to the cluster tool and waits for it to stop its children.
// A tool that already exited or that Kill ended is not an error here; the
// killed tool may not have been reaped yet when Stop runs, so its exit status
// is ignored rather than raced against.
func (c *Cluster) Stop() error {
	select {
	case err := <-c.done:
		c.done <- err
		return nil
	default:
	}
	if !c.killed.Load() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case err := <-c.done:
		c.done <- err
		if c.killed.Load() {
			return nil
		}
		return err
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("cluster tool did not stop within 60s of SIGTERM")
	}
}

// Component names of the cluster tool's children, for Restart, Pause, ....
const (
	APIServer         = "kube-apiserver"
	Scheduler         = "kube-scheduler"
	ControllerManager = "kube-controller-manager"
	Etcd              = "etcd"
	KWOK              = "kwok"
)

// Restart stops one component (SIGTERM, SIGKILL after 10 s) and starts it
// again with the same flags; it returns once the new process runs (for the
// API server: before it serves, see WaitAPI).
func (c *Cluster) Restart(component string) error { return c.control("restart", component) }

// StopComponent stops one component until StartComponent.
func (c *Cluster) StopComponent(component string) error { return c.control("stop", component) }

// StartComponent starts a component StopComponent stopped.
func (c *Cluster) StartComponent(component string) error { return c.control("start", component) }

// Pause freezes one component (SIGSTOP): its port stays open and nothing
// answers, like a hung server or a partition.
func (c *Cluster) Pause(component string) error { return c.control("pause", component) }

// Resume continues a paused component (SIGCONT).
func (c *Cluster) Resume(component string) error { return c.control("resume", component) }

// control sends one request to the cluster tool's control socket
// (hack/cluster/internal/controlplane/control.go speaks the other side).
func (c *Cluster) control(action, component string) error {
	conn, err := net.DialTimeout("unix", filepath.Join(c.StateDir, "control.sock"), 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s %s: cluster tool not answering: %w", action, component, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s %s\n", action, component); err != nil {
		return err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, component, err)
	}
	if reply = strings.TrimSpace(reply); reply != "ok" {
		return fmt.Errorf("%s %s: %s", action, component, strings.TrimPrefix(reply, "error: "))
	}
	return nil
}

// WaitAPI polls the API server's /readyz until it answers ok and returns
// when it did.
func (c *Cluster) WaitAPI(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		body, err := c.KubeClient.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		cancel()
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return time.Now(), nil
		}
		last = err
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("API server not ready within %s: %v", timeout, last)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, errors.Join(ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ReadPIDs parses <state>/pids.
func ReadPIDs(stateDir string) (map[string]int, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, "pids"))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, err
		}
		out[f[0]] = pid
	}
	return out, nil
}

// Alive reports whether pid is a live (not zombie) process.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Fields: pid (comm) state ...; comm may contain spaces, so cut after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// staleTool returns a source file of the cluster tool (what the Makefile's
// CLUSTER_SRC lists: hack/cluster/cmd, hack/cluster/internal, go.mod) that
// changed after the tool was built, or "". `go test` does not run make, so
// without this a test would start yesterday's tool with today's flags.
func staleTool(root, tool string) (string, error) {
	built, err := os.Stat(tool)
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "hack", "cluster")
	if fi, err := os.Stat(filepath.Join(src, "go.mod")); err == nil && fi.ModTime().After(built.ModTime()) {
		return filepath.Join(src, "go.mod"), nil
	}
	newer := ""
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(src, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || newer != "" || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if fi.ModTime().After(built.ModTime()) {
				newer = path
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("checking %s against its sources: %w", tool, err)
		}
	}
	return newer, nil
}
