package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// mixedWorkload is the 1,000 pods both provisioning benchmarks create: 400
// plain pods (900m, 3100Mi), 300 pods spread over zones (500m, 1Gi), 200
// large pods (3500m, 28Gi) and 100 arm64 pods (250m, 256Mi).
func mixedWorkload() []*appsv1.Deployment {
	arm := kit.Deployment("default", "arm", 100, "250m", "256Mi", false)
	arm.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	return []*appsv1.Deployment{
		kit.Deployment("default", "plain", 400, "900m", "3100Mi", false),
		kit.Deployment("default", "zonal", 300, "500m", "1Gi", true),
		kit.Deployment("default", "large", 200, "3500m", "28Gi", false),
		arm,
	}
}

func replicas(deps []*appsv1.Deployment) int {
	n := 0
	for _, d := range deps {
		n += int(*d.Spec.Replicas)
	}
	return n
}

// benchRun is what one run of a workload measured.
type benchRun struct {
	// detected: from applying the Deployments until the poll saw every pod
	// Running (an upper bound of the time to all Running).
	detected time.Duration
	counts   *kit.Counts
	phases   *phases
	usage    kit.Usage // the controller's CPU and peak memory over the run
	// components: CPU each control-plane process used over the run, and the
	// machine's load average at the end (other work shares the cores).
	components map[string]time.Duration
	loadavg    string
	// nodeClaimAPI: the API server's NodeClaim requests over the run (by
	// verb, subresource and code, with its mean time per request).
	nodeClaimAPI apiCounters
	// apiLoad: what else the API server did over the run (see apiLoad).
	apiLoad string
	// claimWrites: Karpenter's NodeClaim writes over the run, by kind, from
	// the audit log.
	claimWrites claimWrites
}

// componentCPU reads the CPU time used so far by each control-plane process.
func componentCPU(e *provisioningEnv) map[string]time.Duration {
	out := map[string]time.Duration{}
	pids, err := e.ChildPIDs()
	if err != nil {
		return out
	}
	for name, pid := range pids {
		if u, err := (&kit.Process{Cmd: &exec.Cmd{Process: &os.Process{Pid: pid}}}).ResourceUsage(); err == nil {
			out[name] = u.CPU
		}
	}
	return out
}

// runWorkload applies deps and waits until all their pods run, then reads the
// cluster's timestamps into a breakdown per phase. The wait polls a
// metadata-only list of Running pods once a second, so that the benchmark itself loads the
// API server as little as possible while it is being measured.
func runWorkload(b *testing.B, e *provisioningEnv, deps []*appsv1.Deployment, timeout time.Duration) benchRun {
	b.Helper()
	before, err := e.karpenter.ResourceUsage()
	if err != nil {
		b.Fatal(err)
	}
	want := replicas(deps)
	cpuBefore := componentCPU(e)
	apiBefore, err := scrapeAPI(e.ctx, e.KubeClient)
	if err != nil {
		b.Fatal(err)
	}
	profiled := profileKarpenter(e)
	apiProfiled := profileAPIServer(e)
	b.StartTimer()
	start := time.Now()
	for _, d := range deps {
		e.apply(b, d)
	}
	running := 0
	// Once a second: the figures come from the cluster's timestamps, the poll
	// only has to notice the end (and a tighter one costs the API server CPU
	// the run is measuring).
	if err := wait.PollUntilContextTimeout(e.ctx, time.Second, timeout, true, func(context.Context) (bool, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := e.Client.List(e.ctx, list, client.InNamespace("default"), client.MatchingFields{"status.phase": string(corev1.PodRunning)}); err != nil {
			return false, err
		}
		running = len(list.Items)
		return running >= want, nil
	}); err != nil {
		c, _ := kit.Count(e.ctx, e.Client, "default")
		b.Fatalf("%d pods not Running (%d are): %+v (log %s)", want, running, c, e.karpenter.LogPath)
	}
	detected := time.Since(start)
	b.StopTimer()
	if err := profiled(); err != nil {
		b.Logf("CPU profile: %v", err)
	}
	if err := apiProfiled(); err != nil {
		b.Logf("API server CPU profile: %v", err)
	}
	after, err := e.karpenter.ResourceUsage()
	if err != nil {
		b.Fatal(err)
	}
	apiAfter, err := scrapeAPI(e.ctx, e.KubeClient)
	if err != nil {
		b.Fatal(err)
	}
	components := componentCPU(e)
	for name, cpu := range components {
		components[name] = cpu - cpuBefore[name]
	}
	components["karpenter"] = after.CPU - before.CPU
	loadavg, _ := os.ReadFile("/proc/loadavg")
	c, err := kit.Count(e.ctx, e.Client, "default")
	if err != nil {
		b.Fatal(err)
	}
	if dir := os.Getenv("BENCH_LOG_DIR"); dir != "" {
		// Karpenter's log goes with the cluster's state directory at the end.
		if log, err := os.ReadFile(e.karpenter.LogPath); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "karpenter-"+start.Format("150405")+".log"), log, 0o644)
		}
		// And the control plane's logs (the API server's traces of slow requests).
		if logs, err := filepath.Glob(filepath.Join(e.StateDir, "logs", "*.log")); err == nil {
			for _, l := range logs {
				if b, err := os.ReadFile(l); err == nil {
					_ = os.WriteFile(filepath.Join(dir, start.Format("150405")+"-"+filepath.Base(l)), b, 0o644)
				}
			}
		}
	}
	ph, err := collectPhases(e.ctx, e.Client, "default", e.karpenter.LogPath, start)
	if err != nil {
		b.Fatal(err)
	}
	audit, err := readAudit(e.AuditLogPath())
	if err != nil {
		b.Fatal(err)
	}
	ph.audit = audit
	writes, err := readClaimWrites(e.AuditLogPath())
	if err != nil {
		b.Fatal(err)
	}
	return benchRun{claimWrites: writes, detected: detected, counts: c, phases: ph, usage: kit.Usage{CPU: after.CPU - before.CPU, PeakRSS: after.PeakRSS},
		components: components, loadavg: strings.TrimSpace(string(loadavg)), nodeClaimAPI: apiAfter.counters("nodeclaims").since(apiBefore.counters("nodeclaims")),
		apiLoad: apiLoad(apiBefore, apiAfter)}
}

// profileKarpenter starts a CPU profile of Karpenter when BENCH_CPU_PROFILE
// names a file (Karpenter must serve pprof: ENABLE_PROFILING=true, which it
// inherits from the benchmark's environment). BENCH_CPU_PROFILE_SECONDS (default
// 30) is how long it records from the moment the workload is applied. The
// returned function waits for the profile and writes it.
func profileKarpenter(e *provisioningEnv) func() error {
	path := os.Getenv("BENCH_CPU_PROFILE")
	if path == "" {
		return func() error { return nil }
	}
	seconds := 30
	if s := os.Getenv("BENCH_CPU_PROFILE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return func() error { return fmt.Errorf("BENCH_CPU_PROFILE_SECONDS=%q: want a positive number", s) }
		}
		seconds = n
	}
	done := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", e.karpenter.MetricsPort, seconds)
		resp, err := http.Get(url)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: %s (is ENABLE_PROFILING=true?)", url, resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return func() error { return <-done }
}

// profileAPIServer takes a CPU profile of kube-apiserver from the moment the
// workload is applied when BENCH_APISERVER_PROFILE names a file (the cluster
// must serve pprof: localcluster.Options.Profiling, which the provisioning
// benchmark sets when the variable is set), for BENCH_CPU_PROFILE_SECONDS
// (default 30).
func profileAPIServer(e *provisioningEnv) func() error {
	path := os.Getenv("BENCH_APISERVER_PROFILE")
	if path == "" {
		return func() error { return nil }
	}
	seconds := os.Getenv("BENCH_CPU_PROFILE_SECONDS")
	if seconds == "" {
		seconds = "30"
	}
	done := make(chan error, 1)
	go func() {
		body, err := e.KubeClient.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).Timeout(5 * time.Minute).DoRaw(e.ctx)
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// report prints the run's figures and its phase table and reports them as
// benchmark metrics.
func (r benchRun) report(b *testing.B, title string) {
	b.Helper()
	claims := r.phases.row("NodeClaims created (Karpenter)")
	if claims.last.IsZero() {
		claims = r.phases.row("NodeClaims created (API)")
	}
	lastClaim := claims.last.Sub(r.phases.origin)
	allRunning := r.phases.row("pods Running (KWOK)").last.Sub(r.phases.origin)
	b.ReportMetric(lastClaim.Seconds(), "s-to-last-nodeclaim")
	b.ReportMetric(allRunning.Seconds(), "s-to-all-running")
	b.ReportMetric(r.detected.Seconds(), "s-to-all-running-seen")
	b.ReportMetric(r.phases.karpenterShare().Seconds(), "s-batch-close-to-nodeclaims")
	b.ReportMetric(r.phases.karpenterOwnShare().Seconds(), "s-own-batch-close-to-nodeclaims")
	b.ReportMetric(r.usage.CPU.Seconds(), "controller-cpu-s")
	b.ReportMetric(float64(r.usage.PeakRSS)/(1<<20), "controller-peak-MiB")
	b.ReportMetric(float64(r.counts.Nodes), "nodes")
	b.ReportMetric(r.counts.CostPerHour, "$/h")
	fmt.Printf("%s: last NodeClaim created %s and all pods Running %s after the first pod was created (seen Running %s after the Deployments were applied); "+
		"batch close -> its NodeClaims created at most %s (%s not waiting inside a create's API call); %d NodeClaims/%d nodes, $%.2f/h; controller CPU %s (%.2f cores avg), peak RSS %.0f MiB\n%s",
		title, lastClaim.Round(10*time.Millisecond), allRunning.Round(10*time.Millisecond), r.detected.Round(10*time.Millisecond),
		r.phases.karpenterShare().Round(time.Millisecond), r.phases.karpenterOwnShare().Round(time.Millisecond), r.counts.NodeClaimsAll, r.counts.Nodes, r.counts.CostPerHour,
		r.usage.CPU.Round(10*time.Millisecond), r.usage.CPU.Seconds()/r.detected.Seconds(), float64(r.usage.PeakRSS)/(1<<20), r.phases)
	names := make([]string, 0, len(r.components))
	for name := range r.components {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Printf("CPU over the run:")
	for _, name := range names {
		fmt.Printf(" %s %.1fs;", name, r.components[name].Seconds())
	}
	fmt.Printf(" load average at the end: %s\n", r.loadavg)
	b.ReportMetric(r.nodeClaimAPI.conflicts(), "nodeclaim-409s")
	fmt.Printf("NodeClaim requests at the API server (verb subresource code: count):%s\n", r.nodeClaimAPI)
	if r.claimWrites.claims > 0 {
		b.ReportMetric(r.claimWrites.statusPerClaim(), "status-writes/nodeclaim")
		fmt.Printf("NodeClaim writes by kind (audit log; per NodeClaim): %s\n", r.claimWrites)
	}
	fmt.Println(r.apiLoad)
}
