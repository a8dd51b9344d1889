// Command cluster builds and runs the project's local Kubernetes control plane.
//
//	cluster build [--bin-dir bin]                 build etcd, kube-apiserver, kube-controller-manager,
//	                                               kube-scheduler, kubectl and kwok (cached by version)
//	cluster up    [--bin-dir bin] [--state-dir .local] [--ready-file F]
//	                                               run them until SIGINT/SIGTERM
//	cluster down  [--state-dir .local]            clean up after a crashed `up`
//	cluster restart|stop|start|pause|resume COMPONENT [--state-dir .local]
//	                                               act on one component of a running `up`
//	                                               (apiserver, scheduler, controller-manager,
//	                                               etcd, kwok); pause is SIGSTOP, resume SIGCONT
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/karpenter-go/karpenter/hack/cluster/internal/build"
	"github.com/karpenter-go/karpenter/hack/cluster/internal/controlplane"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = cmdBuild(os.Args[2:])
	case "up":
		err = cmdUp(os.Args[2:])
	case "down":
		err = cmdDown(os.Args[2:])
	case "restart", "stop", "start", "pause", "resume":
		err = cmdControl(os.Args[1], os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster build|up|down [flags]\n       cluster restart|stop|start|pause|resume COMPONENT [--state-dir DIR]")
	os.Exit(2)
}

// repoRoot finds the repository root (the directory holding hack/cluster/go.mod).
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "cluster", "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func defaultCacheDir() string {
	if v, ok := os.LookupEnv("KARPENTER_BIN_CACHE"); ok {
		return v // "" disables the machine-wide cache
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "karpenter-go", "k8s")
}

func cmdBuild(args []string) error {
	root := repoRoot()
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	binDir := fs.String("bin-dir", filepath.Join(root, "bin"), "where binaries go")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "machine-wide cache shared by clones (\"\" disables; env KARPENTER_BIN_CACHE)")
	_ = fs.Parse(args)
	dir, err := build.Ensure(build.Options{
		ModuleDir: filepath.Join(root, "hack", "cluster"),
		BinDir:    *binDir,
		CacheDir:  *cacheDir,
		Out:       os.Stdout,
	})
	if err != nil {
		return err
	}
	// bin/kubectl at the top level, so `bin/kubectl --kubeconfig .local/kubeconfig ...` works.
	top := filepath.Join(*binDir, "kubectl")
	_ = os.Remove(top)
	rel, _ := filepath.Rel(*binDir, filepath.Join(build.CurrentLink(*binDir), "kubectl"))
	if err := os.Symlink(rel, top); err != nil {
		return err
	}
	fmt.Printf("binaries in %s\n", dir)
	return nil
}

func cmdUp(args []string) error {
	root := repoRoot()
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	binDir := fs.String("bin-dir", filepath.Join(root, "bin"), "where `cluster build` put the binaries")
	stateDir := fs.String("state-dir", filepath.Join(root, ".local"), "state: etcd data, certificates, logs, kubeconfig")
	port := fs.Int("apiserver-port", 0, "kube-apiserver secure port (0 picks a free one)")
	readyFile := fs.String("ready-file", "", "written (with the kubeconfig path) once the cluster is ready")
	mostAllocated := fs.Bool("scheduler-most-allocated", false, "kube-scheduler scores nodes MostAllocated (bin-packing) rather than LeastAllocated")
	noDefaultSpread := fs.Bool("scheduler-no-default-spread", false, "kube-scheduler without its system-default topology spreading (a cost per pod that grows with the cluster; pods' own constraints still apply)")
	percentScore := fs.Int("scheduler-percentage-of-nodes-to-score", 0, "kube-scheduler's percentageOfNodesToScore (0: its adaptive default)")
	schedProfiles := fs.String("scheduler-profiles", "", "kube-scheduler runs with the profiles of this KubeSchedulerConfiguration file (its other fields are the cluster's)")
	schedConfigPath := fs.String("scheduler-config-path", "", "where kube-scheduler's configuration file is written (default: <state-dir>/kube-scheduler.yaml)")
	profiling := fs.Bool("profiling", false, "serve pprof on kube-apiserver, kube-controller-manager and kube-scheduler (/debug/pprof) and etcd (--enable-pprof)")
	leaseSeconds := fs.Int("node-lease-seconds", 0, "duration of KWOK's node Leases, renewed every quarter of it (0: 40); above 600 also the period of its node status heartbeats")
	podDeleteAtOnce := fs.Bool("pod-delete-at-once", false, "KWOK removes terminating pods at once (unless annotated pod-delete.stage.kwok.x-k8s.io/delay), as upstream Karpenter's KWOK end-to-end clusters do; default: at the end of their grace period")
	grace := fs.Duration("node-monitor-grace-period", 0, "kube-controller-manager's --node-monitor-grace-period (0: its default); longer than a Lease renewal")
	disable := fs.String("kcm-disable-controllers", "", "comma-separated kube-controller-manager controllers not to run (e.g. ttl)")
	audit := fs.Bool("audit-nodeclaims", false, "kube-apiserver writes an audit log of NodeClaim writes (logs/audit.log), with its latency breakdown of slow requests")
	gogc := fs.Int("apiserver-gogc", 0, "kube-apiserver's GOGC (0: Go's default): less garbage-collection CPU for a larger heap")
	clientNice := fs.Int("client-nice", 0, "run kube-scheduler, kube-controller-manager and KWOK this much nicer than the API server and etcd")
	_ = fs.Parse(args)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := controlplane.Start(ctx, controlplane.Config{
		BinDir:        build.CurrentLink(*binDir),
		StateDir:      *stateDir,
		Out:           os.Stdout,
		APIServerPort: *port,

		SchedulerMostAllocated:            *mostAllocated,
		SchedulerNoDefaultSpread:          *noDefaultSpread,
		SchedulerPercentageOfNodesToScore: *percentScore,
		SchedulerProfiles:                 *schedProfiles,
		SchedulerConfigPath:               *schedConfigPath,
		Profiling:                         *profiling,
		NodeLeaseSeconds:                  *leaseSeconds,
		PodDeleteAtOnce:                   *podDeleteAtOnce,
		NodeMonitorGracePeriod:            *grace,
		DisableControllers:                splitList(*disable),
		AuditNodeClaims:                   *audit,
		APIServerGOGC:                     *gogc,
		ClientNice:                        *clientNice,
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := c.ServeControl(ctx); err != nil {
		return err
	}
	kubectl, kc := relTo(root, filepath.Join(*binDir, "kubectl")), relTo(root, c.Kubeconfig)
	fmt.Printf(`
Local cluster is ready: %s
  export KUBECONFIG=%s
  %s --kubeconfig %s get nodes,pods -A
Nodes annotated kwok.x-k8s.io/node=fake are run by KWOK. Ctrl-C stops everything.
Chaos: %s restart|pause|resume apiserver --state-dir %s
`, c.Server, c.Kubeconfig, kubectl, kc, relTo(root, os.Args[0]), relTo(root, *stateDir))
	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, []byte(c.Kubeconfig+"\n"), 0o644); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		fmt.Println("stopping the local cluster")
	case msg := <-c.Exited():
		return fmt.Errorf("control plane failed: %s", msg)
	}
	return nil
}

func cmdDown(args []string) error {
	root := repoRoot()
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	stateDir := fs.String("state-dir", filepath.Join(root, ".local"), "state directory of the cluster to clean up")
	_ = fs.Parse(args)
	if err := controlplane.Down(*stateDir, os.Stdout); err != nil {
		return err
	}
	fmt.Printf("cleaned up %s\n", *stateDir)
	return nil
}

func cmdControl(action string, args []string) error {
	root := repoRoot()
	fs := flag.NewFlagSet(action, flag.ExitOnError)
	stateDir := fs.String("state-dir", filepath.Join(root, ".local"), "state directory of the running cluster")
	// The component may come before or after the flags.
	var component string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		component, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	if component == "" && fs.NArg() == 1 {
		component = fs.Arg(0)
	}
	if component == "" {
		return fmt.Errorf("%s: which component? (apiserver, scheduler, controller-manager, etcd, kwok)", action)
	}
	if err := controlplane.Request(*stateDir, action, component); err != nil {
		return err
	}
	fmt.Printf("%s %s: done\n", action, controlplane.Component(component))
	return nil
}

// relTo shortens paths inside the repository for the printed instructions.
func relTo(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
