// Command demo is `make run`: it brings up the local cluster (etcd, kube-apiserver,
// controller-manager, scheduler and KWOK), builds the controller image from source,
// installs both charts with `helm upgrade --install` as users do (the control node's
// kubelet runs the controller's pod from the image under runc; see controller.go),
// creates a default NodeClass and NodePool, scales a demo Deployment 0 → 50 → 0 while
// printing a live view, and then leaves the cluster running until Ctrl-C. Ctrl-C at
// any point stops Karpenter and the cluster.
//
// -cloud-provider (CLOUD_PROVIDER, `make run CLOUD_PROVIDER=aws`) picks the path:
// kwok (a KWOKNodeClass; KWOK fakes instances and nodes) or aws (the AWS emulator runs
// in-process, Karpenter launches through CreateFleet, instances join as Nodes from
// their user data; an EC2NodeClass on al2023@latest; $/h from the emulator's prices).
// -exit (DEMO_EXIT=1) stops after the scale-down: exit 0 when the scale-up and the
// scale-down (pods gone, empty nodes removed) succeeded, 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/test/controllernode"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

func main() {
	replicas := flag.Int("replicas", 50, "replicas to scale the demo Deployment to")
	maxCPU := flag.Int("max-cpu", 16, "largest instance (vCPUs) the default NodePool may launch")
	delay := flag.Duration("node-registration-delay", 3*time.Second, "KWOKNodeClass nodeRegistrationDelay (simulated boot time)")
	exitAfter := flag.Bool("exit", envBool("DEMO_EXIT"), "stop after the scale-down instead of waiting for Ctrl-C; exit 0 only if scale-up and scale-down succeeded (env DEMO_EXIT=1)")
	cloudProvider := flag.String("cloud-provider", envOr("CLOUD_PROVIDER", "kwok"), "kwok or aws (env CLOUD_PROVIDER)")
	stateDir := flag.String("state-dir", "", "where the local cluster keeps its state (default <repo>/.local)")
	budget := flag.String("budget", "", "the NodePool's disruption budget nodes (default upstream's 10%)")
	runtime := flag.String("runtime", envOr("DEMO_RUNTIME", "auto"), "how the control node runs the controller's pod: runc (the image, under Debian's runc; needs root), binary (the controller binary as a process), auto: runc where it can (env DEMO_RUNTIME)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{replicas: int32(*replicas), maxCPU: *maxCPU, delay: *delay, exitAfter: *exitAfter, provider: *cloudProvider, stateDir: *stateDir, budget: *budget, runtime: *runtime}
	// Ctrl-C is a normal end of the interactive demo; with -exit it means the demo did
	// not get to prove the scale-up and scale-down, so it fails.
	if err := run(ctx, cfg); err != nil && (cfg.exitAfter || !errors.Is(err, context.Canceled)) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type config struct {
	replicas  int32
	maxCPU    int
	delay     time.Duration
	exitAfter bool
	provider  string
	stateDir  string
	budget    string
	runtime   string
}

func envBool(k string) bool {
	b, _ := strconv.ParseBool(os.Getenv(k))
	return b
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

type demo struct {
	emulator    *awsemulator.Emulator // aws only
	root, state string
	client      client.Client
	kubeconfig  string
	node        *controllernode.Node // the control node, whose kubelet runs the controller's pod
	pod         string               // the controller's leading pod
	logPath     string               // its log
	metricsPort int                  // the local port of its metrics endpoint
	cluster     *exec.Cmd
	clusterDone chan error
	tty         bool
	start       time.Time
}

func run(ctx context.Context, cfg config) (err error) {
	replicas, maxCPU, delay, exitAfter := cfg.replicas, cfg.maxCPU, cfg.delay, cfg.exitAfter
	if cfg.provider != "kwok" && cfg.provider != "aws" {
		return fmt.Errorf("-cloud-provider %q: must be kwok or aws", cfg.provider)
	}
	root, err := kit.RepoRoot()
	if err != nil {
		return err
	}
	d := &demo{root: root, state: filepath.Join(root, ".local"), start: time.Now()}
	if cfg.stateDir != "" {
		d.state = cfg.stateDir
	}
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		d.tty = true
	}
	defer d.shutdown()

	step("starting the local cluster (etcd, kube-apiserver, controller-manager, scheduler, KWOK)")
	if err := d.startCluster(ctx); err != nil {
		return err
	}
	// The chart's values for this cluster: one replica and no zone spread
	// (the cluster has one control node, without a zone), the provider, and
	// on aws what an EKS install sets (cluster name, interruption queue)
	// plus the endpoint EKS would report.
	values := []string{"--set", "replicas=1", "--set-json", "topologySpreadConstraints=[]", "--set", "cloudProvider=" + cfg.provider, "--set", "settings.clusterName=demo"}
	var outside []string // what the environment gives the pod outside the chart
	if cfg.provider == "aws" {
		step(fmt.Sprintf("starting the AWS emulator (instances boot in %s and join as Nodes from their user data; interruption queue %s)", delay, awsQueue))
		if outside, err = d.startEmulator(delay); err != nil {
			return err
		}
		fmt.Printf("    endpoint %s, cluster %s\n", d.emulator.Endpoint(), awsClusterName)
		values = []string{"--set", "replicas=1", "--set-json", "topologySpreadConstraints=[]", "--set", "cloudProvider=aws", "--set", "settings.clusterName=" + awsClusterName,
			"--set", "settings.interruptionQueue=" + awsQueue, "--set", "settings.clusterEndpoint=" + d.emulator.Cluster().Endpoint}
	}
	mode, why := runtimeMode(cfg.runtime)
	if err := d.startController(ctx, cfg.provider, mode, why, values, outside); err != nil {
		return err
	}
	if cfg.provider == "aws" {
		step(fmt.Sprintf("creating EC2NodeClass default (al2023@latest, subnets and security groups tagged karpenter.sh/discovery=%s) and NodePool default (linux/amd64, ≤%d vCPU, spot or on-demand)", awsClusterName, maxCPU))
		if err := d.client.Create(ctx, awsNodeClass()); err != nil {
			return err
		}
		np := awsNodePool(maxCPU)
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		if cfg.budget != "" {
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: cfg.budget}}
		}
		if err := d.client.Create(ctx, np); err != nil {
			return err
		}
		if err := ec2NodeClassReady(ctx, d.client, "default", 2*time.Minute); err != nil {
			return fmt.Errorf("EC2NodeClass default never became Ready: %w", err)
		}
	} else {
		step(fmt.Sprintf("creating KWOKNodeClass default (nodeRegistrationDelay %s) and NodePool default (linux/amd64, ≤%d vCPU, spot or on-demand)", delay, maxCPU))
		if err := d.client.Create(ctx, kit.DefaultNodeClass(delay)); err != nil {
			return err
		}
		np := kit.DefaultNodePool("default", "default", maxCPU)
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		if cfg.budget != "" {
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: cfg.budget}}
		} // upstream's default: consolidate at once
		if err := d.client.Create(ctx, np); err != nil {
			return err
		}
		if err := kit.NodeClassReady(ctx, d.client, "default", time.Minute); err != nil {
			return fmt.Errorf("KWOKNodeClass default never became Ready: %w", err)
		}
	}
	dep := kit.Deployment("default", "demo", 0, "1", "1Gi", true)
	if err := d.client.Create(ctx, dep); err != nil {
		return err
	}

	phaseStart := time.Now()
	if err := d.scale(ctx, replicas); err != nil {
		return err
	}
	if err := d.watch(ctx, fmt.Sprintf("scale up 0 → %d", replicas), 10*time.Minute, func(c *kit.Counts) bool {
		return c.Running == int(replicas) && c.Pods == int(replicas)
	}); err != nil {
		return err
	}
	up := time.Since(phaseStart)
	downStart := time.Now()
	if err := d.scale(ctx, 0); err != nil {
		return err
	}
	if err := d.watch(ctx, fmt.Sprintf("scale down %d → 0", replicas), 5*time.Minute, func(c *kit.Counts) bool { return c.Pods == 0 }); err != nil {
		return err
	}
	// Removing the now empty nodes is disruption's job (emptiness): every 10 s pass
	// may delete as many empty nodes as the NodePool's budget allows (the default
	// budget is 10% of its nodes, rounded up), each decision re-validated after 15 s.
	nodesGone := d.watch(ctx, "disruption removes the empty nodes", 5*time.Minute, func(c *kit.Counts) bool { return c.Nodes == 0 }) == nil
	c, err := kit.Count(ctx, d.client, "default")
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Printf("All %d pods were Running %s after the scale-up.\n", replicas, up.Round(100*time.Millisecond))
	if nodesGone {
		fmt.Printf("The empty nodes were removed %s after the scale-down, within the NodePool's disruption budget.\n", time.Since(downStart).Round(time.Second))
	} else {
		fmt.Printf("%d node(s) remain 5 minutes after the scale-down; see the NodeClaims' DisruptionBlocked condition and events (bin/kubectl describe nodeclaims) for why.\n", c.Nodes)
	}
	kubectl := rel(d.root, filepath.Join(d.root, "bin", "kubectl"))
	plugin := rel(d.root, filepath.Join(d.root, "bin", "kubectl-karpenter"))
	fmt.Printf(`
The cluster keeps running:
  export KUBECONFIG=%s
  %s get nodepools,nodeclaims,nodes
  %s scale deployment demo --replicas=20
Ask Karpenter before you act (make kubectl-karpenter; never writes to the cluster):
  %[4]s plan --scale deploy/demo=200         # what it would launch, and the cost
  %[4]s why node/NAME                         # why a node is (not) disrupted
  %[4]s why pod/NAME                          # why a pod is pending
  %[4]s top                                   # the fleet and its cost, live
Karpenter log: %[5]s   metrics: http://127.0.0.1:%[6]d/metrics
Ctrl-C stops Karpenter and the cluster.
`, d.kubeconfig, kubectl, kubectl, plugin, rel(d.root, d.logPath), d.metricsPort)
	if exitAfter {
		if !nodesGone {
			return fmt.Errorf("scale-down incomplete: %d node(s) left", c.Nodes)
		}
		fmt.Println("DEMO_EXIT: scale-up and scale-down succeeded")
		return nil
	}
	select {
	case <-ctx.Done():
		fmt.Println("\nstopping Karpenter and the local cluster")
		return nil
	case err := <-d.clusterDone:
		return fmt.Errorf("local cluster exited: %v", err)
	}
}

var demoStart = time.Now()

func step(msg string) { fmt.Printf("==> [%s] %s\n", time.Since(demoStart).Round(time.Second), msg) }

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func (d *demo) startCluster(ctx context.Context) error {
	tool := filepath.Join(d.root, "bin", "cluster")
	if _, err := os.Stat(tool); err != nil {
		return fmt.Errorf("%s not found: run `make cluster-bins` first", tool)
	}
	// A previous run killed without clean-up may have left processes behind.
	_ = exec.Command(tool, "down", "--state-dir", d.state).Run()
	if err := os.RemoveAll(d.state); err != nil {
		return err
	}
	if err := os.MkdirAll(d.state, 0o755); err != nil {
		return err
	}
	ready := filepath.Join(d.state, "ready")
	logf, err := os.Create(filepath.Join(d.state, "cluster.log"))
	if err != nil {
		return err
	}
	d.cluster = exec.Command(tool, "up", "--bin-dir", filepath.Join(d.root, "bin"), "--state-dir", d.state, "--ready-file", ready)
	d.cluster.Stdout, d.cluster.Stderr = logf, logf
	d.cluster.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := d.cluster.Start(); err != nil {
		return err
	}
	d.clusterDone = make(chan error, 1)
	go func() { d.clusterDone <- d.cluster.Wait(); logf.Close() }()
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-d.clusterDone:
			d.clusterDone <- err
			log, _ := os.ReadFile(filepath.Join(d.state, "cluster.log"))
			return fmt.Errorf("local cluster exited before it was ready (%v):\n%s", err, log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	d.kubeconfig = filepath.Join(d.state, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	if err := addAPIExtensions(scheme); err != nil {
		return err
	}
	d.client, err = client.New(cfg, client.Options{Scheme: scheme})
	return err
}

// shutdown stops Karpenter first (so it does not react to the cluster going
// away), then the cluster tool, which stops its own children.
func (d *demo) shutdown() {
	if d.node != nil {
		d.node.Stop()
	}
	if d.emulator != nil {
		_ = d.emulator.Close()
	}
	if d.cluster != nil && d.cluster.Process != nil {
		select {
		case err := <-d.clusterDone:
			d.clusterDone <- err
			return
		default:
		}
		_ = d.cluster.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.clusterDone:
		case <-time.After(60 * time.Second):
			_ = d.cluster.Process.Kill()
			fmt.Fprintln(os.Stderr, "local cluster did not stop within 60s; killed")
		}
	}
}

func (d *demo) scale(ctx context.Context, replicas int32) error {
	dep := &appsv1.Deployment{}
	if err := d.client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "demo"}, dep); err != nil {
		return err
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = &replicas
	return d.client.Patch(ctx, dep, patch)
}

// watch redraws the live view every second until done or timeout.
func (d *demo) watch(ctx context.Context, phase string, timeout time.Duration, done func(*kit.Counts) bool) error {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPlain := time.Time{}
	for {
		c, err := kit.Count(ctx, d.client, "default")
		if err != nil {
			return err
		}
		if d.emulator != nil {
			c.CostPerHour = d.awsCost(ctx)
		}
		finished := done(c)
		if d.tty {
			fmt.Print("\033[H\033[2J")
			render(os.Stdout, phase, time.Since(start), c)
		} else if finished || time.Since(lastPlain) >= 5*time.Second {
			lastPlain = time.Now()
			renderLine(os.Stdout, phase, time.Since(start), c)
		}
		if finished {
			if d.tty {
				fmt.Printf("\n%s: done in %s\n", phase, time.Since(start).Round(100*time.Millisecond))
			}
			return nil
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("%s: not done after %s", phase, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-d.clusterDone:
			d.clusterDone <- err
			return fmt.Errorf("local cluster exited: %v", err)
		case <-tick.C:
		}
	}
}

func render(w io.Writer, phase string, elapsed time.Duration, c *kit.Counts) {
	fmt.Fprintf(w, "Karpenter demo — %s  (%s)\n\n", phase, elapsed.Round(time.Second))
	fmt.Fprintf(w, "Pods        %4d total   %4d pending   %4d running\n", c.Pods, c.Pending, c.Running)
	fmt.Fprintf(w, "NodeClaims  %4d total  ", c.NodeClaimsAll)
	for _, s := range []string{"Pending", "Launched", "Registered", "Ready", "Deleting"} {
		fmt.Fprintf(w, " %s %d ", s, c.NodeClaims[s])
	}
	fmt.Fprintf(w, "\nNodes       %4d total   %4d ready\n", c.Nodes, c.ReadyNodes)
	fmt.Fprintf(w, "Cost        $%.4f per hour\n\n", c.CostPerHour)
	if len(c.NodesByType) > 0 {
		fmt.Fprintf(w, "  %-24s %-14s %-10s %s\n", "INSTANCE TYPE", "ZONE", "CAPACITY", "NODES")
		for _, k := range kit.SortedKeys(c.NodesByType) {
			f := strings.Fields(k + " - - -")
			fmt.Fprintf(w, "  %-24s %-14s %-10s %d\n", f[0], f[1], f[2], c.NodesByType[k])
		}
	}
}

func renderLine(w io.Writer, phase string, elapsed time.Duration, c *kit.Counts) {
	var types []string
	for _, k := range kit.SortedKeys(c.NodesByType) {
		types = append(types, fmt.Sprintf("%s×%d", strings.ReplaceAll(k, " ", "/"), c.NodesByType[k]))
	}
	fmt.Fprintf(w, "[%s %5s] pods %d (pending %d, running %d) | nodeclaims %d %v | nodes %d (ready %d) $%.4f/h | %s\n",
		phase, elapsed.Round(time.Second), c.Pods, c.Pending, c.Running, c.NodeClaimsAll, c.NodeClaims, c.Nodes, c.ReadyNodes, c.CostPerHour, strings.Join(types, " "))
}
