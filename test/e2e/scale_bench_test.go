package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// BenchmarkScaleFleet: the largest KWOK fleet, provisioned and consolidated end to end on the
// local cluster with the invariant watcher on. FLEET_NODES (default 500; SCALE_NODES is the
// older name) nodes of 16 vCPU are filled with ten 1.5-vCPU pods each (10×FLEET_NODES
// replicas in Deployments of FLEET_PODS_PER_DEPLOYMENT, default 500); once every pod runs,
// each Deployment is scaled to half and
// consolidation enabled (budget 10%), and the benchmark waits until the pods run on at most 60%
// of the nodes. It prints one row: nodes, pods, the time to all Running, the time to
// consolidate, nodes after, Karpenter's CPU time (summed over restarts) and peak RSS, the API
// server's and etcd's peak RSS, CPU time per component, invariant violations and the machine's
// load. Run it alone, with
//
//	FLEET_NODES=5000 go test ./test/e2e -run '^$' -bench ScaleFleet -benchtime 1x -timeout 3h
//
// (ENABLE_PROFILING=true passes through to Karpenter: pprof on its metrics port.)
// FLEET_PROFILE_DIR=dir writes 30-s CPU profiles of kube-apiserver, etcd, kube-scheduler,
// kube-controller-manager, KWOK and Karpenter, a minute (FLEET_PROFILE_AT: a list of
// durations) into provisioning and half a minute into consolidation;
// FLEET_NODE_LEASE_SECONDS (default 3600) is KWOK's node Lease duration;
// FLEET_LEADER_ELECTION=false runs Karpenter without leader election;
// FLEET_SCHEDULER_PERCENT (default 5, 0 for kube-scheduler's own default) is
// kube-scheduler's percentageOfNodesToScore; FLEET_SCHEDULER_DEFAULT_SPREAD=true keeps its
// system-default topology spreading (off by default: see below); FLEET_APISERVER_GOGC
// (default 300) is the API server's GOGC; FLEET_PROFILE_SECONDS (default 30)
// the length of each profile.
func BenchmarkScaleFleet(b *testing.B) {
	nodes := envInt(b, "FLEET_NODES", envInt(b, "SCALE_NODES", 500, 1, math.MaxInt32/10, "nodes"), 1, math.MaxInt32/10, "nodes")
	pods := int32(10 * nodes)
	// The pods come in Deployments of FLEET_PODS_PER_DEPLOYMENT (default 500) replicas.
	// kube-controller-manager's ReplicaSet controller goes over all of a ReplicaSet's pods
	// on every sync, one sync at a time per ReplicaSet, and every binding and Running
	// status is a sync: one 20,000-pod Deployment made it 73% of the controller manager's
	// CPU (a third of a core) 6 minutes into a 2,000-node scale-up, and one ReplicaSet
	// cannot use more than a core. Clusters that size run many Deployments.
	podsPerDeployment := int32(envInt(b, "FLEET_PODS_PER_DEPLOYMENT", 500, 2, math.MaxInt32, "pods"))
	// The poll reads the watcher's view (no API requests); it counts the pods in memory.
	every := 2 * time.Second
	// KWOK renews each node's Lease every quarter of its duration: at the kubelet's 40 s a
	// fleet of N nodes is N/10 Lease writes a second, most of what the API server writes at
	// thousands of nodes. The fleet's Leases last FLEET_NODE_LEASE_SECONDS (default 3,600: a
	// renewal every 15 minutes; at 600 s, 1,000 nodes still renewed 6.7 a second), KWOK's
	// node status heartbeats come as seldom, and kube-controller-manager waits as long
	// before it calls a node Unknown.
	leaseSeconds := envInt(b, "FLEET_NODE_LEASE_SECONDS", 3600, 10, math.MaxInt32, "seconds")
	// kube-controller-manager's ttl controller annotates every node for kubelets (KWOK
	// reads none) and re-patches all of them each time the fleet crosses a size step. Its
	// endpointslice controller re-reads every node's zone and CPU on each node change
	// (topology hints): 18% of its CPU 3 minutes into a 2,000-node scale-up, for a fleet
	// with no Service.
	// kube-scheduler scores FLEET_SCHEDULER_PERCENT of the nodes (default 5; 0: its adaptive
	// default, a third of 2,000 nodes) once it has found that many feasible ones (at least
	// 100): the fleet's nodes are all alike, and with the default its CPU per pod grew with
	// the fleet (93 cpu-s at 1,000 nodes, 467 at 2,000 over the scale-up).
	schedulerPercent := envInt(b, "FLEET_SCHEDULER_PERCENT", 5, 0, 100, "percent")
	// kube-scheduler's system-default topology spreading (soft, over zones and hosts, for
	// every pod a ReplicaSet owns) is off unless FLEET_SCHEDULER_DEFAULT_SPREAD=true: scoring
	// it counts every fleet pod on the candidate zones' nodes for each pod scheduled. At
	// 2,000 nodes it took three quarters of kube-scheduler's CPU (profile 3 min into the
	// scale-up), the scheduler 59% of a core and the fleet's pace.
	defaultSpread := os.Getenv("FLEET_SCHEDULER_DEFAULT_SPREAD") == "true"
	// The API server's GOGC: FLEET_APISERVER_GOGC (default 300; 100 is Go's). Once
	// kube-scheduler kept up, the API server was the busiest process (95% of a core three
	// minutes into a 2,000-node scale-up), a third of it allocation and garbage
	// collection. At 5,000 nodes its RSS peaked at 3.4 GB with Go's default and at 13.4 GB
	// with 300 (e303521, 2026-11-27): it trades most of the machine's 23 GB for that CPU, so lower
	// it first on a smaller machine.
	gogc := envInt(b, "FLEET_APISERVER_GOGC", 300, 100, math.MaxInt32, "percent")
	opts := localcluster.Options{NodeLeaseSeconds: leaseSeconds, NodeMonitorGracePeriod: time.Duration(max(leaseSeconds, 50)) * time.Second,
		DisableControllers: []string{"ttl", "endpointslice"}, SchedulerPercentageOfNodesToScore: schedulerPercent, SchedulerNoDefaultSpread: !defaultSpread,
		APIServerGOGC: gogc,
		// Karpenter's NodeClaim writes by kind and field manager, per phase.
		AuditNodeClaims: true}
	// FLEET_PROFILE_DIR: CPU profiles of every component (30 s, at FLEET_PROFILE_AT into
	// provisioning and half a minute into consolidation) are written there.
	dir := os.Getenv("FLEET_PROFILE_DIR")
	if dir != "" {
		opts.Profiling = true
		b.Setenv("ENABLE_PROFILING", "true")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// FLEET_LEADER_ELECTION=false runs the one Karpenter without leader election
	// (DISABLE_LEADER_ELECTION, safe with one replica): on a machine loaded by others the
	// API server can answer a Lease renewal after more than 5 s, and every lost Lease is a
	// restart that lists the whole fleet again. The row says which way it ran.
	leaderElection := os.Getenv("FLEET_LEADER_ELECTION") != "false"
	if !leaderElection {
		b.Setenv("DISABLE_LEADER_ELECTION", "true")
	}
	// FLEET_PROFILE_AT: when into provisioning to profile (comma-separated durations, default
	// 1m): the scheduler's and the API server's costs per pod grow with the fleet, so a
	// large fleet is profiled late in its scale-up too.
	profileAt := []time.Duration{time.Minute}
	if s := os.Getenv("FLEET_PROFILE_AT"); s != "" {
		profileAt = nil
		for _, f := range strings.Split(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				b.Fatalf("FLEET_PROFILE_AT=%q: want durations such as 1m,10m", s)
			}
			profileAt = append(profileAt, d)
		}
	}
	e := startProvisioningWith(b, opts)
	var prof *fleetProfiler
	if dir != "" {
		prof = newFleetProfiler(e, dir)
		defer prof.wait()
	}
	np := disruptionPool("default", v1.Never, "10%")
	np.Spec.Template.Spec.Requirements = setRequirement(kit.DefaultNodePool("default", "default", 16).Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"16"}})
	w := startInvariantWatcher(b, e, "default")
	// On a loaded machine the API server can be too slow for the leader Lease to be renewed:
	// Karpenter then exits, and is restarted as the kubelet would.
	restarts := e.supervise(b, nil)
	e.apply(b, kit.DefaultNodeClass(0), np)
	if err := kit.NodeClassReady(e.ctx, e.Client, "default", time.Minute); err != nil {
		b.Fatal(err)
	}
	m := newFleetMeter(e)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.sample()
		m.mark()
		// The API server's requests by verb and resource, per phase: one /metrics
		// scrape at each phase's start and end (what the fleet costs the server is
		// read from these, not guessed).
		apiStart := scrapeFleetAPI(e)
		schedStart := scrapeScheduler(e)
		deps := fleetDeployments(pods, podsPerDeployment)
		start := time.Now()
		for _, d := range deps {
			e.apply(b, d)
		}
		for _, at := range profileAt {
			prof.after(b, "provision-"+at.String(), at)
		}
		last := waitFleet(b, e, w, m, every, 90*time.Minute, func(c fleetCounts) bool {
			return c.pods == int(pods) && c.running == int(pods)
		})
		running := time.Since(start)
		peakNodes := last.nodes
		provisionCPU := m.used()
		fmt.Printf("scale: %d pods Running on %d nodes after %s; CPU %s (load %s)\n", pods, last.nodes, running.Round(time.Second), provisionCPU, loadAvg())
		apiRunning := scrapeFleetAPI(e)
		fmt.Printf("scale: scale-up %s\n", apiLoad(apiStart, apiRunning))
		schedRunning := scrapeScheduler(e)
		fmt.Printf("scale: scale-up kube-scheduler: %s\n", schedRunning.since(schedStart))
		writesRunning := fleetClaimWrites(b, e)
		fmt.Printf("scale: scale-up NodeClaim writes: %s\n", writesRunning)

		// Half the pods go; consolidation packs the rest onto about half the nodes.
		half := int32(0)
		for _, d := range deps {
			n := *d.Spec.Replicas / 2
			half += n
			if err := e.Client.Patch(e.ctx, d, client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))); err != nil {
				b.Fatal(err)
			}
		}
		waitFleet(b, e, w, m, every, 30*time.Minute, func(c fleetCounts) bool { return c.pods == int(half) && c.running == int(half) })
		m.mark()
		cstart := time.Now()
		e.updateNodePool(b, "default", func(np *v1.NodePool) {
			np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		})
		prof.after(b, "consolidate", 30*time.Second)
		target := peakNodes * 6 / 10
		last = waitFleet(b, e, w, m, every, 90*time.Minute, func(c fleetCounts) bool {
			return c.nodes <= target && c.nodeClaims == c.nodes && c.pods == int(half) && c.running == int(half)
		})
		consolidated := time.Since(cstart)
		consolidateCPU := m.used()
		fmt.Printf("scale: scale-down and consolidation %s\n", apiLoad(apiRunning, scrapeFleetAPI(e)))
		fmt.Printf("scale: scale-down and consolidation kube-scheduler: %s\n", scrapeScheduler(e).since(schedRunning))
		fmt.Printf("scale: scale-down and consolidation NodeClaim writes: %s\n", fleetClaimWrites(b, e).since(writesRunning))
		violations := w.Violations()
		karpenterCPU := m.total("karpenter")
		b.ReportMetric(float64(peakNodes), "nodes")
		b.ReportMetric(float64(pods), "pods")
		b.ReportMetric(running.Seconds(), "s-to-all-running")
		b.ReportMetric(consolidated.Seconds(), "s-to-consolidate")
		b.ReportMetric(float64(last.nodes), "nodes-after")
		b.ReportMetric(karpenterCPU.Seconds(), "controller-cpu-s")
		b.ReportMetric(float64(m.rss["karpenter"])/(1<<20), "controller-peak-MiB")
		b.ReportMetric(float64(m.rss[localcluster.APIServer])/(1<<20), "apiserver-peak-MiB")
		b.ReportMetric(float64(m.rss[localcluster.Etcd])/(1<<20), "etcd-peak-MiB")
		b.ReportMetric(float64(restarts()), "controller-restarts")
		b.ReportMetric(float64(violations), "invariant-violations")
		fmt.Printf("scale: consolidated to %d nodes in %s; CPU %s (load %s)\n", last.nodes, consolidated.Round(time.Second), consolidateCPU, loadAvg())
		fmt.Printf("| nodes | pods | to all Running | to consolidated | nodes after | Karpenter cpu-s | Karpenter peak RSS | API server / etcd peak RSS | violations | load |\n")
		fmt.Printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		fmt.Printf("| %d | %d | %s | %s | %d | %.0f | %.0f MiB | %.0f / %.0f MiB | %d | %s |\n",
			peakNodes, pods, running.Round(time.Second), consolidated.Round(time.Second), last.nodes, karpenterCPU.Seconds(),
			float64(m.rss["karpenter"])/(1<<20), float64(m.rss[localcluster.APIServer])/(1<<20), float64(m.rss[localcluster.Etcd])/(1<<20),
			violations, loadAvg())
		fmt.Printf("scale: Karpenter restarts %d (leader election %t, node Leases %d s, scheduler scores %d%% of nodes, scheduler default spreading %t, API server GOGC %d); CPU over the whole run: %s\n",
			restarts(), leaderElection, leaseSeconds, schedulerPercent, defaultSpread, gogc, m.all())
		if w.KarpenterRemovals() == 0 {
			b.Error("the invariant watcher saw no pod removed by Karpenter: it judged nothing")
		}
		w.Assert(b)
		prof.wait()
		if i < b.N-1 {
			b.Fatal("BenchmarkScaleFleet runs once: use -benchtime 1x")
		}
	}
}

// fleetClaimWrites reads the NodeClaim writes the audit log holds so far.
func fleetClaimWrites(b *testing.B, e *provisioningEnv) claimWrites {
	w, err := readClaimWrites(e.AuditLogPath())
	if err != nil {
		b.Fatalf("reading the audit log: %v", err)
	}
	return w
}

// scrapeFleetAPI reads the API server's metrics; a failed scrape (an API server too
// busy to answer) leaves that phase's summary empty rather than failing the run.
func scrapeFleetAPI(e *provisioningEnv) apiMetrics {
	m, err := scrapeAPI(e.ctx, e.KubeClient)
	if err != nil {
		fmt.Printf("scale: scraping the API server's metrics: %v\n", err)
	}
	return m
}

// fleetCounts is what the benchmark's poll sees: pods (not terminating), those Running, nodes
// and NodeClaims.
type fleetCounts struct {
	pods, running, nodes, nodeClaims int
}

// fleetCounts reads the invariant watcher's view, which its watches keep current: the
// benchmark lists nothing (at tens of thousands of pods, polling lists every few seconds
// cost the API server 5% of its CPU, more than some of the components measured).
func (w *invariantWatcher) fleetCounts(namespace string) fleetCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out fleetCounts
	for key, p := range w.pods {
		if key.Namespace != namespace || p.DeletionTimestamp != nil {
			continue
		}
		out.pods++
		if p.Status.Phase == corev1.PodRunning {
			out.running++
		}
	}
	out.nodes = len(w.nodes)
	out.nodeClaims = len(w.claims) - len(w.claimsGone)
	return out
}

// waitFleet polls the counts every `every` until done, sampling the processes' CPU and memory.
func waitFleet(b *testing.B, e *provisioningEnv, w *invariantWatcher, m *fleetMeter, every, timeout time.Duration, done func(fleetCounts) bool) fleetCounts {
	b.Helper()
	var last fleetCounts
	err := wait.PollUntilContextTimeout(e.ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		m.sample()
		last = w.fleetCounts("default")
		return done(last), nil
	})
	m.sample()
	if err != nil {
		b.Fatalf("%v: %+v (log %s)", err, last, e.current().LogPath)
	}
	return last
}

// fleetMeter samples the CPU time and peak RSS of Karpenter (every process the supervisor
// started: the CPU of a process that exited is its last sample) and of each control-plane
// component, and the benchmark process's own CPU (the invariant watcher and the polls).
type fleetMeter struct {
	e     *provisioningEnv
	cpu   map[string]map[int]time.Duration // component -> pid -> CPU time at the last sample
	rss   map[string]int64                 // component -> peak RSS seen
	marks map[string]time.Duration         // totals at the last mark
}

const benchProcess = "bench+watcher"

func newFleetMeter(e *provisioningEnv) *fleetMeter {
	m := &fleetMeter{e: e, cpu: map[string]map[int]time.Duration{}, rss: map[string]int64{}, marks: map[string]time.Duration{}}
	m.sample()
	return m
}

func (m *fleetMeter) sample() {
	pids, _ := m.e.ChildPIDs()
	pids = maps.Clone(pids)
	if pids == nil {
		pids = map[string]int{}
	}
	pids["karpenter"] = m.e.current().Cmd.Process.Pid
	pids[benchProcess] = os.Getpid()
	for name, pid := range pids {
		u, err := (&kit.Process{Cmd: &exec.Cmd{Process: &os.Process{Pid: pid}}}).ResourceUsage()
		if err != nil {
			continue
		}
		if m.cpu[name] == nil {
			m.cpu[name] = map[int]time.Duration{}
		}
		m.cpu[name][pid] = u.CPU
		m.rss[name] = max(m.rss[name], u.PeakRSS)
	}
}

func (m *fleetMeter) total(name string) time.Duration {
	var t time.Duration
	for _, c := range m.cpu[name] {
		t += c
	}
	return t
}

// mark starts a phase; used reports the CPU each component used since.
func (m *fleetMeter) mark() {
	for name := range m.cpu {
		m.marks[name] = m.total(name)
	}
}

func (m *fleetMeter) used() string {
	return m.format(func(name string) time.Duration { return m.total(name) - m.marks[name] })
}

func (m *fleetMeter) all() string { return m.format(m.total) }

func (m *fleetMeter) format(cpu func(string) time.Duration) string {
	names := slices.Sorted(maps.Keys(m.cpu))
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.0fs", name, cpu(name).Seconds()))
	}
	return strings.Join(parts, ", ")
}

func loadAvg() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(string(out))
	if i := strings.Index(s, "load average"); i >= 0 {
		return s[i:]
	}
	return s
}

// fleetDeployments splits pods into Deployments fleet-0, fleet-1, ... of perDeployment
// replicas each (the last takes the rest), every pod 1.5 vCPU and 1 GiB.
func fleetDeployments(pods, perDeployment int32) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for i := 0; pods > 0; i++ {
		n := min(pods, perDeployment)
		out = append(out, kit.Deployment("default", fmt.Sprintf("fleet-%d", i), n, "1500m", "1Gi", false))
		pods -= n
	}
	return out
}

// envInt reads a whole number from the environment variable name (def when it is unset) and
// stops the benchmark, naming the variable and the range, when it is not one from low to high.
func envInt(b *testing.B, name string, def, low, high int, unit string) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < low || n > high {
		b.Fatalf("%s=%q: want a whole number of %s from %d to %d", name, s, unit, low, high)
	}
	return n
}
