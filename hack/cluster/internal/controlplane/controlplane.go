// Package controlplane runs a local Kubernetes control plane as child processes:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK (fake
// kubelets for nodes that carry the kwok.x-k8s.io/node=fake annotation).
//
// Every child is started in its own process group with a parent-death signal, its
// pid is recorded in <state>/pids so that `cluster down` can clean up after a crash,
// and Stop terminates all of them (SIGTERM, then SIGKILL after a grace period).
package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/hack/cluster/internal/pki"
)

// Config says where the binaries are and where state goes.
type Config struct {
	BinDir   string // directory holding etcd, kube-apiserver, ... (bin/k8s/current)
	StateDir string // e.g. .local
	Out      io.Writer
	// APIServerPort is the secure port of kube-apiserver; 0 picks a free port.
	APIServerPort int
	// SchedulerMostAllocated makes kube-scheduler score nodes MostAllocated
	// (bin-packing) instead of its default LeastAllocated (spreading); see
	// schedulerConfig.
	SchedulerMostAllocated bool
	// SchedulerNoDefaultSpread turns off kube-scheduler's system-default
	// topology spreading (PodTopologySpread defaultingType List, no default
	// constraints). The default soft-spreads every pod a ReplicaSet owns over
	// zones and hosts, and scoring it counts, for each pod scheduled, every
	// pod of its ReplicaSet on every node of the candidate zones: a cost per
	// pod that grows with the cluster. In a 2,000-node KWOK fleet with one
	// 20,000-pod Deployment it was three quarters of kube-scheduler's CPU,
	// and kube-scheduler the busiest process after the API server. Karpenter
	// does not plan with it (upstream neither); pods with their own
	// topologySpreadConstraints keep them.
	SchedulerNoDefaultSpread bool
	// SchedulerPercentageOfNodesToScore is kube-scheduler's
	// percentageOfNodesToScore (0: its adaptive default, 50% less 1% per
	// 125 nodes, at least 5%: a third of 2,000 nodes). Once it has found that
	// share of feasible nodes (at least 100) it stops filtering and scores
	// only those; a KWOK fleet whose nodes are all alike loses nothing by a
	// small share, and the scheduler's CPU per pod stops growing with the
	// fleet.
	SchedulerPercentageOfNodesToScore int
	// SchedulerProfiles: kube-scheduler runs with the profiles of this
	// KubeSchedulerConfiguration file (e.g. one with a profile carrying
	// podTopologySpread.defaultConstraints); the file's other fields are
	// replaced by the cluster's (client connection, leader election). Not
	// with SchedulerMostAllocated or SchedulerNoDefaultSpread, which write
	// profiles of their own.
	SchedulerProfiles string
	// SchedulerConfigPath is where kube-scheduler's configuration file is
	// written (default <state>/kube-scheduler.yaml): suites that recognise a
	// cluster by the path in the scheduler's arguments can be given theirs.
	SchedulerConfigPath string
	// Profiling serves pprof on kube-apiserver, kube-controller-manager and
	// kube-scheduler (/debug/pprof on their secure ports, behind their
	// authorization: the admin certificate may read it) and on etcd's client
	// URL (--enable-pprof). KWOK v0.8.0's server has no CPU profile to serve.
	// Off by default: a profile is asked for by a benchmark that wants to know
	// where the control plane's CPU goes.
	Profiling bool
	// NodeLeaseSeconds is the duration of the Leases KWOK holds for its nodes
	// (0: 40 s, the kubelet's default). KWOK renews a Lease every quarter of
	// it, so with 40 s a fleet of N nodes costs the API server N/10 Lease
	// updates a second: 500 a second at 5,000 nodes, on two cores. A fleet
	// benchmark lengthens it, with NodeMonitorGracePeriod.
	NodeLeaseSeconds int
	// PodDeleteAtOnce: KWOK removes a terminating pod at once, as upstream
	// Karpenter's KWOK end-to-end clusters do (unless the pod's
	// pod-delete.stage.kwok.x-k8s.io/delay annotation asks for a delay),
	// rather than at the end of its grace period as a kubelet would.
	PodDeleteAtOnce bool
	// NodeMonitorGracePeriod is how long kube-controller-manager's node
	// lifecycle controller waits for a Lease renewal (or a status heartbeat)
	// before it marks a node Unknown and taints it (0: its default, 50 s). It
	// must be longer than the renewal interval, NodeLeaseSeconds/4.
	NodeMonitorGracePeriod time.Duration
	// DisableControllers are kube-controller-manager controllers not to run
	// (its --controllers=*,-name,...). A fleet benchmark turns off "ttl": it
	// annotates every node with a cache TTL for kubelets (KWOK reads none)
	// and re-annotates all of them each time the fleet crosses a size step
	// (90, 450, 900, 1,800, 9,000 nodes): thousands of node patches.
	DisableControllers []string
	// AuditNodeClaims makes kube-apiserver write an audit log of NodeClaim
	// writes to logs/audit.log (see auditPolicy): the API server's own time
	// and latency breakdown per request, for a benchmark to explain what a
	// client waited for.
	AuditNodeClaims bool
	// APIServerGOGC sets kube-apiserver's GOGC (0: the Go default, 100). On
	// two cores the API server is the busiest process of a scale-up and a
	// sixth of its CPU goes to garbage collection; a benchmark that measures
	// request latency trades memory (a larger heap) for that CPU.
	APIServerGOGC int
	// ClientNice runs kube-scheduler, kube-controller-manager and KWOK that
	// much nicer than the API server and etcd (0: the same). Those three
	// produce most of the API server's requests in a scale-up; when they
	// compete with it for two cores, every request (Karpenter's too) waits
	// longer for the API server to get to it.
	ClientNice int
}

// Cluster is a running control plane.
type Cluster struct {
	cfg        Config
	Kubeconfig string
	Server     string
	mu         sync.Mutex
	procs      []*proc
	pki        pki.Files
	// exited receives the first child that ended without being asked to.
	exited chan string
	// control serialises restart/stop/start/pause/resume requests.
	control sync.Mutex
	// bindConflict: a child that ended on its own had failed to bind a port
	// ("address already in use").
	bindConflict atomic.Bool
}

type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// intended: the exit was asked for (Stop, a restart), not a failure.
	intended atomic.Bool
}

// PIDFile lists the children of a running cluster, one "name pid" a line.
func PIDFile(stateDir string) string { return filepath.Join(stateDir, "pids") }

// Start brings the control plane up and returns once the API server is ready, the
// scheduler and controller manager are healthy and the default ServiceAccount
// exists (so that pods can be created).
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, c)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make cluster-bins` first", c, cfg.BinDir)
		}
	}
	if err := Down(cfg.StateDir, cfg.Out); err != nil {
		return nil, err
	}
	for _, d := range []string{"logs", "pki"} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, d), 0o755); err != nil {
			return nil, err
		}
	}
	files, err := pki.Write(filepath.Join(cfg.StateDir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("writing certificates: %w", err)
	}
	for attempt := 1; ; attempt++ {
		c, err := boot(ctx, cfg, files)
		if err == nil {
			return c, nil
		}
		// Another listener took a port between the pick and the bind (see
		// ports.go): the same start on other ports can succeed. Any other
		// failure would only repeat.
		if !c.bindConflict.Load() || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Out, "%v\nport taken meanwhile: starting again on other ports (attempt %d of %d)\n", err, attempt+1, startAttempts)
		if err := Down(cfg.StateDir, cfg.Out); err != nil {
			return nil, err
		}
	}
}

// startAttempts bounds Start's retries after a port conflict.
const startAttempts = 3

// boot is one attempt of Start: it picks ports and starts every child. On
// failure the children are stopped and the returned Cluster (never nil) says
// whether a child failed to bind its port.
func boot(ctx context.Context, cfg Config, files pki.Files) (c *Cluster, err error) {
	c = &Cluster{cfg: cfg, pki: files, exited: make(chan string, 1)}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	ports, err := pickPorts(5)
	if err != nil {
		return c, err
	}
	etcdClient, etcdPeer, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3]
	apiPort := cfg.APIServerPort
	if apiPort == 0 {
		apiPort = ports[4]
	}
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	c.Kubeconfig = filepath.Join(cfg.StateDir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, files); err != nil {
		return c, err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcdArgs := append([]string{
		"--name=local", "--data-dir=" + filepath.Join(cfg.StateDir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=local=" + peerURL, "--unsafe-no-fsync", "--log-level=warn",
	}, flagIf(cfg.Profiling, "--enable-pprof")...)
	if err := c.spawn("etcd", etcdArgs...); err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health", nil, 60*time.Second); err != nil {
		return c, err
	}

	audit, err := auditArgs(cfg)
	if err != nil {
		return c, err
	}
	if err := c.spawn("kube-apiserver", append([]string{
		"--etcd-servers=" + etcdURL,
		"--profiling=" + strconv.FormatBool(cfg.Profiling),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + files.ServingCert, "--tls-private-key-file=" + files.ServingKey,
		"--client-ca-file=" + files.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.SAPublic, "--service-account-signing-key-file=" + files.SAPrivate,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
	}, audit...)...); err != nil {
		return c, err
	}
	client, err := c.httpClient()
	if err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.Server+"/readyz", client, 120*time.Second); err != nil {
		return c, err
	}

	kc := "--kubeconfig=" + c.Kubeconfig
	auth := []string{kc, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1"}
	kcmArgs := append(auth,
		"--secure-port="+strconv.Itoa(kcmPort),
		"--service-account-private-key-file="+files.SAPrivate, "--root-ca-file="+files.CACert,
		"--cluster-signing-cert-file="+files.CACert, "--cluster-signing-key-file="+files.CAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--profiling="+strconv.FormatBool(cfg.Profiling),
		// The default client limit (20 qps) makes the ReplicaSet controller,
		// not Karpenter, the bottleneck when a benchmark creates 1,000 pods:
		// each pod is a create and a SuccessfulCreate event, so even 200 qps
		// spread 1,000 pods over 10 s. The API server on the same cores is the
		// only limit worth having here.
		"--kube-api-qps="+clientQPS, "--kube-api-burst="+clientBurst,
		"--concurrent-replicaset-syncs=10", "--concurrent-deployment-syncs=10",
	)
	kcmArgs = append(kcmArgs, kcmFleetArgs(cfg)...)
	if err := c.spawn("kube-controller-manager", kcmArgs...); err != nil {
		return c, err
	}
	schedArgs := append(auth,
		"--secure-port="+strconv.Itoa(schedPort), "--profiling="+strconv.FormatBool(cfg.Profiling),
		// The scheduler's default (50 qps) spends 40 s marking 1,000 pods
		// unschedulable (a status patch and an event each) and as long again
		// binding them: it held Karpenter's batches open at their 10 s maximum.
		"--kube-api-qps="+clientQPS, "--kube-api-burst="+clientBurst,
	)
	if cfg.SchedulerMostAllocated || cfg.SchedulerNoDefaultSpread || cfg.SchedulerPercentageOfNodesToScore > 0 || cfg.SchedulerProfiles != "" {
		path, err := writeSchedulerConfig(cfg.StateDir, c.Kubeconfig, cfg)
		if err != nil {
			return c, err
		}
		// With --config the scheduler ignores --kubeconfig, --kube-api-qps
		// and --leader-elect: the file carries them.
		schedArgs = append(schedArgs, "--config="+path)
	}
	if err := c.spawn("kube-scheduler", schedArgs...); err != nil {
		return c, err
	}
	stages, err := writeKWOKStages(cfg.StateDir, cfg.NodeLeaseSeconds, cfg.PodDeleteAtOnce)
	if err != nil {
		return c, err
	}
	if err := c.spawn("kwok", kc, "--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--manage-nodes-with-label-selector=",
		"--cidr=10.1.0.1/16",
		"--node-ip=10.1.0.1",
		"--node-lease-duration-seconds="+strconv.Itoa(cmp.Or(cfg.NodeLeaseSeconds, 40)),
	); err != nil {
		return c, err
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec: local health probe of our own children
	if err := c.waitHTTP(ctx, "kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), insecure, 60*time.Second); err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "kube-scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort), insecure, 60*time.Second); err != nil {
		return c, err
	}
	// Pods cannot be created before the ServiceAccount controller made "default".
	if err := c.waitHTTP(ctx, "default service account", c.Server+"/api/v1/namespaces/default/serviceaccounts/default", client, 60*time.Second); err != nil {
		return c, err
	}
	return c, nil
}

// kcmFleetArgs are kube-controller-manager's flags for the Config's fleet
// options: controllers left out and the node monitor's grace period.
func kcmFleetArgs(cfg Config) []string {
	var out []string
	if len(cfg.DisableControllers) > 0 {
		out = append(out, "--controllers=*,-"+strings.Join(cfg.DisableControllers, ",-"))
	}
	return append(out, flagIf(cfg.NodeMonitorGracePeriod > 0, "--node-monitor-grace-period="+cfg.NodeMonitorGracePeriod.String())...)
}

// niceness is how much nicer than the cluster tool the component runs (see
// Config.ClientNice).
func (cfg Config) niceness(component string) int {
	switch component {
	case "kube-scheduler", "kube-controller-manager", "kwok":
		return cfg.ClientNice
	}
	return 0
}

// flagIf is flags when on, else nothing.
func flagIf(on bool, flags ...string) []string {
	if on {
		return flags
	}
	return nil
}

// Client limits of kube-controller-manager and kube-scheduler: high enough
// that neither throttles itself below what the API server can take on this
// machine (kwokctl's --disable-qps-limits goes further, to 5,000).
const (
	clientQPS   = "1000"
	clientBurst = "2000"
)

// schedulerConfig is kube-scheduler's configuration file for the Config's
// scheduler options. MostAllocated: kube-scheduler fills the nodes Karpenter
// launched for a batch the way Karpenter packed them, instead of spreading
// each pod onto the least used node, which leaves the pods planned for a node
// without room there (with the default, about a third of a 1,000-pod
// scale-up's NodeClaims were launched in later batches for pods kube-scheduler
// had displaced). Client limits as the flags above.
func schedulerConfig(kubeconfig string, cfg Config) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %s
  burst: %s
leaderElection:
  leaderElect: false
`, kubeconfig, clientQPS, clientBurst)
	if cfg.SchedulerPercentageOfNodesToScore > 0 {
		fmt.Fprintf(&b, "percentageOfNodesToScore: %d\n", cfg.SchedulerPercentageOfNodesToScore)
	}
	if cfg.SchedulerProfiles != "" {
		if cfg.SchedulerMostAllocated || cfg.SchedulerNoDefaultSpread {
			return "", fmt.Errorf("scheduler profiles from %s: not with --scheduler-most-allocated or --scheduler-no-default-spread", cfg.SchedulerProfiles)
		}
		profiles, err := profilesOf(cfg.SchedulerProfiles)
		if err != nil {
			return "", err
		}
		b.WriteString(profiles)
		return b.String(), nil
	}
	if !cfg.SchedulerMostAllocated && !cfg.SchedulerNoDefaultSpread {
		return b.String(), nil
	}
	b.WriteString(`profiles:
- schedulerName: default-scheduler
  pluginConfig:
`)
	if cfg.SchedulerNoDefaultSpread {
		b.WriteString(`  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: []
`)
	}
	if cfg.SchedulerMostAllocated {
		b.WriteString(`  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`)
	}
	return b.String(), nil
}

// profilesOf is the profiles list of a KubeSchedulerConfiguration file, as
// YAML ("profiles: ...").
func profilesOf(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Kind     string `json:"kind"`
		Profiles []any  `json:"profiles"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != "KubeSchedulerConfiguration" || len(doc.Profiles) == 0 {
		return "", fmt.Errorf("%s: want a KubeSchedulerConfiguration with profiles", path)
	}
	out, err := yaml.Marshal(map[string]any{"profiles": doc.Profiles})
	return string(out), err
}

func writeSchedulerConfig(stateDir, kubeconfig string, cfg Config) (string, error) {
	path, err := filepath.Abs(cmp.Or(cfg.SchedulerConfigPath, filepath.Join(stateDir, "kube-scheduler.yaml")))
	if err != nil {
		return "", err
	}
	kc, err := filepath.Abs(kubeconfig)
	if err != nil {
		return "", err
	}
	text, err := schedulerConfig(kc, cfg)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// Stop terminates every child, newest first, and removes the pid file.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		terminate(procs[i])
	}
	_ = os.Remove(PIDFile(c.cfg.StateDir))
}

// terminate ends a child and its process group: SIGTERM, SIGKILL after 10 s.
// A paused (SIGSTOPped) child is continued so that it can act on SIGTERM.
func terminate(p *proc) {
	p.intended.Store(true)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Exited reports the first child that died on its own (not by Stop or a
// control request), if any.
func (c *Cluster) Exited() <-chan string { return c.exited }

// PIDs returns the pid of each child.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.name] = p.cmd.Process.Pid
	}
	return out
}

func (c *Cluster) logPath(name string) string {
	return filepath.Join(c.cfg.StateDir, "logs", name+".log")
}

func (c *Cluster) spawn(name string, args ...string) error {
	p, err := c.start(name, args)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	err = c.writePIDs()
	c.mu.Unlock()
	return err
}

// start runs one child (appending to its log) without recording it.
func (c *Cluster) start(name string, args []string) (*proc, error) {
	logFile, err := os.OpenFile(c.logPath(name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	// Where this run's output begins: an exit reports only its own lines.
	var logStart int64
	if st, err := logFile.Stat(); err == nil {
		logStart = st.Size()
	}
	cmd := exec.Command(filepath.Join(c.cfg.BinDir, name), args...)
	if n := c.cfg.niceness(name); n > 0 {
		// nice execs the binary (same PID), and every thread inherits it.
		cmd = exec.Command("nice", append([]string{"-n", strconv.Itoa(n), filepath.Join(c.cfg.BinDir, name)}, args...)...)
	}
	if name == "kube-apiserver" && c.cfg.APIServerGOGC > 0 {
		cmd.Env = append(os.Environ(), "GOGC="+strconv.Itoa(c.cfg.APIServerGOGC))
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group: Stop can signal a child together with anything it forks.
	// Pdeathsig: if this process is killed outright, the kernel kills the children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// (The signal is tied to the forking OS thread; the Go runtime only retires
	// threads that a goroutine locked and left, which we never do.)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, args: args, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
		if !p.intended.Load() {
			out := logSince(c.logPath(p.name), logStart)
			tail := lastLines(out, exitTailLines)
			if strings.Contains(out, "address already in use") {
				c.bindConflict.Store(true)
			}
			msg := fmt.Sprintf("%s exited: %v (log: %s)", p.name, p.err, c.logPath(p.name))
			if tail != "" {
				msg += "\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
			}
			select {
			case c.exited <- msg:
			default:
			}
		}
	}()
	fmt.Fprintf(c.cfg.Out, "started %-24s pid %-7d log %s\n", name, cmd.Process.Pid, c.logPath(name))
	return p, nil
}

// exitTailLines: how much of a child's log its unexpected exit reports.
const exitTailLines = 5

// logSince is what was written to path from offset from on (at most its
// last 64 KiB), "" if the file cannot be read.
func logSince(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size()-from > window {
		from = st.Size() - window
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// lastLines is the last n lines of s, each cut to 400 bytes.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "..."
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func (c *Cluster) writePIDs() error {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "%s %d\n", p.name, p.cmd.Process.Pid)
	}
	return os.WriteFile(PIDFile(c.cfg.StateDir), []byte(b.String()), 0o644)
}

func (c *Cluster) httpClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.AdminCert, c.pki.AdminKey)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}, nil
}

func (c *Cluster) waitHTTP(ctx context.Context, what, url string, client *http.Client, timeout time.Duration) error {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	start := time.Now()
	deadline := start.Add(timeout)
	exited := c.Exited()
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(c.cfg.Out, "%s ready after %s\n", what, time.Since(start).Round(10*time.Millisecond))
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%s)", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg := <-exited:
			select { // still the cluster's failure, for `up` to report
			case c.exited <- msg:
			default:
			}
			return errors.New(msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Down stops the children a previous run recorded in <state>/pids (after a crash or
// a SIGKILL of the parent) and removes etcd's data so the next start is clean.
func Down(stateDir string, out io.Writer) error {
	b, err := os.ReadFile(PIDFile(stateDir))
	if err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			pid, err := strconv.Atoi(f[1])
			if err != nil || !runningAs(pid, f[0]) {
				continue
			}
			fmt.Fprintf(out, "stopping leftover %s (pid %d)\n", f[0], pid)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = os.Remove(PIDFile(stateDir))
	} else if !os.IsNotExist(err) {
		return err
	}
	return os.RemoveAll(filepath.Join(stateDir, "etcd"))
}

// runningAs guards against killing an unrelated process that reused a recorded pid.
func runningAs(pid int, name string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0 := strings.SplitN(string(cmdline), "\x00", 2)[0]
	return filepath.Base(argv0) == name
}

func writeKubeconfig(path, server string, f pki.Files) error {
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
`, server, abs(f.CACert), abs(f.AdminCert), abs(f.AdminKey))
	return os.WriteFile(path, []byte(content), 0o600)
}
