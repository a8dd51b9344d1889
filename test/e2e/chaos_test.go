package e2e_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// timeline polls the cluster a few times a second and logs each change of
// its summary (NodeClaims by state, nodes, Ready nodes, pods bound and
// Running) with the time since start, so that a slow recovery shows which
// step waited.
type timeline struct {
	t     testing.TB
	e     *provisioningEnv
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	lines []string
}

func startTimeline(t testing.TB, e *provisioningEnv) *timeline {
	tl := &timeline{t: t, e: e, start: time.Now(), stop: make(chan struct{})}
	tl.done.Add(1)
	go func() {
		defer tl.done.Done()
		last := ""
		for {
			if c, err := kit.Count(e.ctx, e.Client, "default"); err == nil {
				s := fmt.Sprintf("nodeclaims %v, nodes %d (ready %d), pods %d (pending %d, running %d)",
					c.NodeClaims, c.Nodes, c.ReadyNodes, c.Pods, c.Pending, c.Running)
				if s != last {
					tl.mark(s)
					last = s
				}
			}
			select {
			case <-tl.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return tl
}

// mark records an event (also the test's own: "API back").
func (tl *timeline) mark(s string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, fmt.Sprintf("%6.1fs %s", time.Since(tl.start).Seconds(), s))
}

// Log stops the timeline and logs it.
func (tl *timeline) Log() {
	close(tl.stop)
	tl.done.Wait()
	tl.t.Logf("timeline:\n%s", strings.Join(tl.lines, "\n"))
}

// TestChaosAPIServerRestartDuringProvisioning: the API server is restarted
// while instances launch (NodeClaims launched, no Node yet). Every pod runs,
// nothing leaks, and the test logs "API back → pods Running" (the recovery
// time docs/chaos.md reports), with a timeline of what happened in between.
func TestChaosAPIServerRestartDuringProvisioning(t *testing.T) {
	t.Parallel()
	apiOutageDuringProvisioning(t, func(e *provisioningEnv, tl *timeline) {
		if err := e.Restart(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server restarted (process running)")
	})
}

// TestChaosAPIServerPauseDuringProvisioning: the same with the API server
// frozen (SIGSTOP) for 5 s: connections hang instead of being refused.
func TestChaosAPIServerPauseDuringProvisioning(t *testing.T) {
	t.Parallel()
	apiOutageDuringProvisioning(t, func(e *provisioningEnv, tl *timeline) {
		if err := e.Pause(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server paused")
		time.Sleep(5 * time.Second) // the outage itself: nothing to poll for
		if err := e.Resume(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server resumed")
	})
}

func apiOutageDuringProvisioning(t *testing.T, outage func(*provisioningEnv, *timeline)) {
	e := startProvisioning(t)
	const replicas = 12
	e.apply(t, kit.DefaultNodeClass(5*time.Second), kit.DefaultNodePool("default", "default", 4),
		kit.Deployment("default", "app", replicas, "1", "1Gi", false))
	e.waitLaunchedNoNode(t)
	tl := startTimeline(t, e)
	restarts := e.supervise(t, tl)
	outage(e, tl)
	back, err := e.WaitAPI(e.ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tl.mark("API server ready")
	c := e.waitRunning(t, replicas, 3*time.Minute)
	recovery := time.Since(back)
	tl.mark("all pods Running")
	tl.Log()
	e.expectNodesMatchNodeClaims(t)
	t.Logf("API back → %d pods Running: %.1fs (%d nodes, karpenter restarted %d times)", replicas, recovery.Seconds(), c.Nodes, restarts())
}

// supervise plays the kubelet for the rest of the test: whenever the
// Karpenter process has exited (it does when it cannot renew its leader
// Lease for 10 s, and when a test kills it) the same pod is started again,
// at once. It returns the number of restarts so far.
func (e *provisioningEnv) supervise(t testing.TB, tl *timeline) func() int {
	bin := karpenterBinary(t)
	stop, stopped := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var started []*kit.Process
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if !e.current().Exited() {
				continue
			}
			p, err := e.launch(bin, "karpenter-0")
			if err != nil {
				t.Errorf("restarting karpenter: %v", err)
				return
			}
			mu.Lock()
			started = append(started, p)
			mu.Unlock()
			if tl != nil {
				tl.mark("karpenter had exited: restarted (" + p.LogPath + ")")
			}
		}
	}()
	// The supervisor stops before the processes it started (and before the
	// first one's own clean-up, registered earlier), so nothing restarts a
	// process the test is stopping.
	t.Cleanup(func() {
		close(stop)
		<-stopped
		for _, p := range started {
			if err := p.Stop(30 * time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(started)
	}
}

// waitLaunchedNoNode waits until NodeClaims exist and all are launched while
// no Node registered yet: the middle of provisioning.
func (e *provisioningEnv) waitLaunchedNoNode(t testing.TB) {
	t.Helper()
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		ncs := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, ncs); err != nil {
			return false, err
		}
		for _, nc := range ncs.Items {
			if nc.Status.ProviderID == "" {
				return false, nil
			}
		}
		return len(ncs.Items) > 0, nil
	}); err != nil {
		t.Fatal("no nodeclaim launched")
	}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Fatalf("nodes already registered (%d): not mid-provisioning", len(nodes.Items))
	}
}

// drainInFlight reports a pod terminating on a node Karpenter tainted
// karpenter.sh/disrupted: the moment a crash hurts most.
func (e *provisioningEnv) drainInFlight(t testing.TB) (what, pod string) {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		return "", ""
	}
	tainted := map[string]bool{}
	for i := range nodes.Items {
		if hasDisruptedTaint(&nodes.Items[i]) {
			tainted[nodes.Items[i].Name] = true
		}
	}
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default")); err != nil {
		return "", ""
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() && tainted[p.Spec.NodeName] {
			return fmt.Sprintf("pod %s terminating on disrupted node %s", p.Name, p.Spec.NodeName), p.Name
		}
	}
	return "", ""
}

// killDuringDrains SIGKILLs Karpenter up to times times, each time while a
// drain is in flight, and starts it again at once (as the kubelet would).
// It stops early once done reports the disruption finished; it returns how
// many kills it made.
func (e *provisioningEnv) killDuringDrains(t testing.TB, times int, done func() bool) int {
	t.Helper()
	e.supervise(t, nil)
	kills := 0
	seen := map[string]bool{}
	for kills < times {
		var what string
		err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
			if done() {
				return true, nil
			}
			// Each kill hits a different drain: the one the restarted
			// process started, not the one the last kill interrupted.
			var pod string
			what, pod = e.drainInFlight(t)
			return pod != "" && !seen[pod], nil
		})
		if err != nil {
			t.Fatalf("no drain in flight within 2m after %d kills (%s); karpenter log %s", kills, e.stuck(t), e.current().LogPath)
		}
		if what == "" {
			break // finished before the next kill
		}
		seen[strings.Fields(what)[1]] = true
		killed := e.current()
		killed.Kill()
		kills++
		t.Logf("kill %d: SIGKILLed karpenter with %s", kills, what)
		if err := poll(e.ctx, time.Minute, func() (bool, error) { return e.current() != killed, nil }); err != nil {
			t.Fatal("the supervisor did not restart karpenter")
		}
	}
	return kills
}

// stuck describes what a stalled disruption waits on: the tainted nodes and
// their pods, the pods not Running and the PDBs' allowed disruptions.
func (e *provisioningEnv) stuck(t testing.TB) string {
	var parts []string
	nodes := &corev1.NodeList{}
	pods := &corev1.PodList{}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		return err.Error()
	}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default")); err != nil {
		return err.Error()
	}
	if err := e.Client.List(e.ctx, pdbs, client.InNamespace("default")); err != nil {
		return err.Error()
	}
	on := map[string][]string{}
	for _, p := range pods.Items {
		state := string(p.Status.Phase)
		if !p.DeletionTimestamp.IsZero() {
			state += ",terminating"
		}
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], p.Name+"("+state+")")
	}
	for _, n := range nodes.Items {
		if hasDisruptedTaint(&n) || !n.DeletionTimestamp.IsZero() {
			parts = append(parts, fmt.Sprintf("node %s disrupted=%v deleting=%v pods %v", n.Name, hasDisruptedTaint(&n), !n.DeletionTimestamp.IsZero(), on[n.Name]))
		}
	}
	if len(on[""]) > 0 {
		parts = append(parts, fmt.Sprintf("unbound pods %v", on[""]))
	}
	for _, pdb := range pdbs.Items {
		parts = append(parts, fmt.Sprintf("PDB %s: healthy %d of %d desired, %d disruptions allowed",
			pdb.Name, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.DisruptionsAllowed))
	}
	return strings.Join(parts, "; ")
}

// expectConverged waits (up to within) until the NodePool has want nodes, all
// replicas run, no NodeClaim is deleting and no node carries the
// karpenter.sh/disrupted taint, then checks that Nodes and NodeClaims match
// one to one. It returns how long convergence took.
func (e *provisioningEnv) expectConverged(t testing.TB, pool string, want, replicas int, within time.Duration, also ...func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	if err := poll(e.ctx, within, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		if err != nil {
			return false, err
		}
		nodes := e.nodesOf(t, pool)
		tainted := 0
		for i := range nodes {
			if hasDisruptedTaint(&nodes[i]) {
				tainted++
			}
		}
		last = fmt.Sprintf("nodes %d (want %d), tainted %d, nodeclaims %v, pods %d running %d (want %d)",
			len(nodes), want, tainted, c.NodeClaims, c.Pods, c.Running, replicas)
		for _, f := range also {
			if !f() {
				last += " (and the test's own condition is not met)"
				return false, nil
			}
		}
		return len(nodes) == want && tainted == 0 && c.NodeClaims["Deleting"] == 0 && c.NodeClaimsAll == want &&
			c.Pods == replicas && c.Running == replicas, nil
	}); err != nil {
		t.Fatalf("not converged within %s: %s (%s); karpenter log %s", within, last, e.stuck(t), e.current().LogPath)
	}
	e.expectNodesMatchNodeClaims(t)
	return time.Since(start)
}

// consolidationLayout builds TestDisruptionConsolidation's half-empty layout
// with n nodes: one web pod (1.5 vCPU, grace 5 s, PDB maxUnavailable 1) on
// each 4-vCPU node, consolidation off until the caller turns it on.
func consolidationLayout(t *testing.T, e *provisioningEnv, n int32, grace int64) *invariantWatcher {
	t.Helper()
	pool := disruptionPool("default", v1.Never, "50%")
	pool.Spec.Template.Spec.Requirements = setRequirement(pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"4"}})
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(kit.Deployment("default", "placeholder", n, "2", "256Mi", false)))
	e.waitRunning(t, int(n), 3*time.Minute)
	e.apply(t, withGrace(kit.Deployment("default", "web", n, "1500m", "256Mi", false), grace), maxUnavailablePDB("web", 1))
	e.waitRunning(t, 2*int(n), 2*time.Minute)
	if err := e.Client.Delete(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "placeholder", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, int(n), time.Minute)
	if got := len(e.nodesRunning(t, "web")); got != int(n) {
		t.Fatalf("web runs on %d nodes, want %d", got, n)
	}
	return w
}

func startConsolidating(t *testing.T, e *provisioningEnv) {
	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	})
}

// TestChaosKillDuringConsolidation: Karpenter is SIGKILLed three times while
// consolidation drains nodes whose pods take 5 s to terminate. The PDB and
// the budget hold, and within 4 minutes the pool converges on half the nodes
// with every pod Running, no leftover taint and no orphan.
func TestChaosKillDuringConsolidation(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const n = 6
	w := consolidationLayout(t, e, n, 5)
	start := time.Now()
	startConsolidating(t, e)
	kills := e.killDuringDrains(t, 3, func() bool { return len(e.nodesOf(t, "default")) == n/2 })
	took := e.expectConverged(t, "default", n/2, n, 4*time.Minute)
	t.Logf("%d kills; converged on %d nodes %s after the last kill, %s after consolidation began",
		kills, n/2, took.Round(time.Second), time.Since(start).Round(time.Second))
	if kills == 0 {
		t.Error("no kill happened during a drain: the test judged nothing")
	}
	expectMaxDisrupting(t, w, 1, n/2)
	w.Assert(t)
}

// TestChaosKillDuringDrift: every node drifts (budget one node at a time)
// and Karpenter is SIGKILLed three times while a drain is in flight. All
// nodes are replaced within 4 minutes, one at a time, with the PDB held and
// nothing left behind.
func TestChaosKillDuringDrift(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 4
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), disruptionPool("default", v1.Never, "1"),
		oneper(withGrace(kit.Deployment("default", "web", replicas, "1", "256Mi", false), 5)), maxUnavailablePDB("web", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	old := e.claimsByNode(t)
	start := time.Now()
	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "blue"}
	})
	relabelled := func() bool {
		for _, n := range e.nodesOf(t, "default") {
			if _, stale := old[n.Name]; stale {
				return false
			}
		}
		return true
	}
	kills := e.killDuringDrains(t, 3, relabelled)
	took := e.expectConverged(t, "default", replicas, replicas, 4*time.Minute, relabelled)
	t.Logf("%d kills; drift converged %s after the last kill, %s after it began", kills, took.Round(time.Second), time.Since(start).Round(time.Second))
	if kills == 0 {
		t.Error("no kill happened during a drain: the test judged nothing")
	}
	expectMaxDisrupting(t, w, 1, 1)
	w.Assert(t)
}

// TestChaosAPIServerDuringConsolidation: while consolidation drains, the API
// server is frozen for 5 s, then later restarted (Karpenter restarted if it
// lost its lease meanwhile). The PDB and budget hold and the pool converges
// within 4 minutes.
func TestChaosAPIServerDuringConsolidation(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const n = 6
	// The pods take 20 s to terminate, so each drain stays in flight long
	// enough to be seen and interrupted on a loaded machine (with 5 s, all
	// three drains of one decision ended unseen between two polls in
	// e2e runs four clusters at a time).
	w := consolidationLayout(t, e, n, 20)
	tl := startTimeline(t, e)
	restarts := e.supervise(t, tl)
	startConsolidating(t, e)
	waitDrain := func() {
		if err := poll(e.ctx, 2*time.Minute, func() (bool, error) { _, pod := e.drainInFlight(t); return pod != "", nil }); err != nil {
			t.Fatalf("no drain in flight; karpenter log %s", e.current().LogPath)
		}
	}
	waitDrain()
	if err := e.Pause(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	tl.mark("API server paused during a drain")
	time.Sleep(5 * time.Second) // the outage itself: nothing to poll for
	if err := e.Resume(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	tl.mark("API server resumed")
	if _, err := e.WaitAPI(e.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(e.nodesOf(t, "default")) > n/2 {
		waitDrain()
		if err := e.Restart(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server restarted during a drain")
		if _, err := e.WaitAPI(e.ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server ready")
	}
	took := e.expectConverged(t, "default", n/2, n, 4*time.Minute)
	tl.mark("converged")
	tl.Log()
	t.Logf("converged %s after the API server came back (karpenter restarted %d times)", took.Round(time.Second), restarts())
	expectMaxDisrupting(t, w, 1, n/2)
	w.Assert(t)
}

// TestChaosLeaderHandover: two Karpenter processes share the Lease; the
// leader is SIGKILLed while drift drains a node, the standby takes over
// (within the 15 s lease) and finishes the drift with the budget and PDB
// held; the standby did nothing before it led.
func TestChaosLeaderHandover(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	first := e.current()
	e.startReplica(t, karpenterBinary(t), "karpenter-1") // the standby
	second := e.current()
	var leader, standby *kit.Process
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		a, b := acquired(t, first), acquired(t, second)
		if a && b {
			return false, fmt.Errorf("both processes acquired the lease")
		}
		leader, standby = first, second
		if b {
			leader, standby = second, first
		}
		return a || b, nil
	}); err != nil {
		t.Fatalf("leader election: %v", err)
	}
	e.mu.Lock()
	e.karpenter = leader
	e.mu.Unlock()
	const replicas = 3
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), disruptionPool("default", v1.Never, "1"),
		oneper(withGrace(kit.Deployment("default", "web", replicas, "1", "256Mi", false), 5)), maxUnavailablePDB("web", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	old := e.claimsByNode(t)
	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "blue"}
	})
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) { _, pod := e.drainInFlight(t); return pod != "", nil }); err != nil {
		t.Fatalf("no drain in flight; karpenter log %s", leader.LogPath)
	}
	if acquired(t, standby) {
		t.Fatal("the standby acquired the lease while the leader lived")
	}
	leader.Kill()
	killed := time.Now()
	e.mu.Lock()
	e.karpenter = standby
	e.mu.Unlock()
	if err := poll(e.ctx, time.Minute, func() (bool, error) { return acquired(t, standby), nil }); err != nil {
		t.Fatalf("the standby did not take the lease within 1m of the leader's death; log %s", standby.LogPath)
	}
	t.Logf("standby led %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	took := e.expectConverged(t, "default", replicas, replicas, 4*time.Minute, func() bool {
		for _, n := range e.nodesOf(t, "default") {
			if _, stale := old[n.Name]; stale {
				return false
			}
		}
		return true
	})
	t.Logf("drift finished by the new leader %s after the hand-over", took.Round(time.Second))
	expectMaxDisrupting(t, w, 1, 1)
	w.Assert(t)
}

// acquired: the process logged that it took the leader Lease.
func acquired(t testing.TB, p *kit.Process) bool {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "Successfully acquired lease")
}
