package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// `kubectl delete node` on a Karpenter node running pods of a Deployment
// guarded by a PDB (maxUnavailable 1): the node is drained one pod at a time,
// the pods run again on other capacity, the Node, its NodeClaim and its
// instance are gone, and at no moment were two pods unavailable.
func TestTerminationKubectlDeleteNode(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 6
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 4),
		withGrace(kit.Deployment("default", "web", replicas, "1", "512Mi", false), 3), maxUnavailablePDB("web", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	victim, claim := e.busiestNode(t, "web")

	w := watchHealthy(t, e, "web")
	start := time.Now()
	// kubectl waits for the Node to be gone, i.e. for Karpenter's finalizer.
	e.kubectl(t, 2*time.Minute, "delete", "node", victim)
	t.Logf("kubectl delete node %s returned after %s", victim, time.Since(start).Round(100*time.Millisecond))
	e.expectTerminated(t, victim, claim)
	e.expectWorkloadMoved(t, "web", replicas, victim)
	w.expectAtLeast(t, replicas-1)
	// Pods were evicted through the Eviction API, and the PDB refused some
	// evictions along the way (more than one pod shared the node).
	expectKarpenterEvent(t, e, "Evicted")
	expectKarpenterEvent(t, e, "FailedDraining")
	t.Logf("drained and replaced in %s; fewest healthy web pods seen: %d of %d", time.Since(start).Round(100*time.Millisecond), w.min(), replicas)
}

// `kubectl delete nodeclaim`: the same graceful path, entered from the claim.
func TestTerminationKubectlDeleteNodeClaim(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 4
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 4),
		withGrace(kit.Deployment("default", "api", replicas, "1", "512Mi", false), 3), maxUnavailablePDB("api", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	victim, claim := e.busiestNode(t, "api")

	w := watchHealthy(t, e, "api")
	start := time.Now()
	e.kubectl(t, 2*time.Minute, "delete", "nodeclaim", claim)
	e.expectTerminated(t, victim, claim)
	e.expectWorkloadMoved(t, "api", replicas, victim)
	w.expectAtLeast(t, replicas-1)
	t.Logf("nodeclaim %s terminated in %s; fewest healthy api pods seen: %d of %d", claim, time.Since(start).Round(100*time.Millisecond), w.min(), replicas)
}

// `kubectl delete nodepool old --cascade=foreground` once a new NodePool
// exists (the migration path of the seeds): the garbage collector deletes the
// old pool's NodeClaims, every old node is drained within the PDB, the pods
// move to the new pool's nodes, and the old NodePool is gone last.
func TestTerminationDeleteNodePoolForeground(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 4
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("old", "default", 4),
		withGrace(kit.Deployment("default", "svc", replicas, "1", "512Mi", false), 3), maxUnavailablePDB("svc", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	oldClaims := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, oldClaims, client.MatchingLabels{v1.NodePoolLabelKey: "old"}); err != nil || len(oldClaims.Items) == 0 {
		t.Fatalf("no nodeclaims of pool old (%v)", err)
	}
	e.apply(t, kit.DefaultNodePool("new", "default", 4))

	w := watchHealthy(t, e, "svc")
	start := time.Now()
	// Foreground: kubectl returns once the NodePool itself is gone, after
	// all its NodeClaims (blockOwnerDeletion) are.
	e.kubectl(t, 2*time.Minute, "delete", "nodepool", "old", "--cascade=foreground")
	if err := e.Client.Get(e.ctx, client.ObjectKey{Name: "old"}, &v1.NodePool{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("NodePool old still exists (%v)", err)
	}
	for _, nc := range oldClaims.Items {
		e.expectTerminated(t, nc.Status.NodeName, nc.Name)
	}
	e.expectWorkloadMoved(t, "svc", replicas, "")
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Labels[v1.NodePoolLabelKey] != "new" {
			t.Errorf("node %s of pool %q left after the old pool was deleted", n.Name, n.Labels[v1.NodePoolLabelKey])
		}
	}
	w.expectAtLeast(t, replicas-1)
	t.Logf("%d old nodes drained and the pool deleted in %s; fewest healthy svc pods seen: %d of %d",
		len(oldClaims.Items), time.Since(start).Round(100*time.Millisecond), w.min(), replicas)
}

func maxUnavailablePDB(app string, n int32) *policyv1.PodDisruptionBudget {
	return fixtures.PodDisruptionBudget(app, fixtures.WithMaxUnavailable(intstr.FromInt32(n)), fixtures.WithSelector(map[string]string{"app": app}))
}

// kubectl runs bin/kubectl against the local cluster and fails the test when
// it fails or outlives timeout.
func (e *provisioningEnv) kubectl(t *testing.T, timeout time.Duration, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.Root, "bin", "kubectl"), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s\nkarpenter log: %s", args, err, out, e.karpenter.LogPath)
	}
}

// busiestNode returns the node running most pods of app (at least two, so
// that the PDB has to pace the drain) and its NodeClaim.
func (e *provisioningEnv) busiestNode(t *testing.T, app string) (node, claim string) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range pods.Items {
		count[p.Spec.NodeName]++
		if count[p.Spec.NodeName] > count[node] {
			node = p.Spec.NodeName
		}
	}
	if count[node] < 2 {
		t.Fatalf("no node runs two %s pods: %v", app, count)
	}
	n := &corev1.Node{}
	if err := e.Client.Get(e.ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	ncs := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	for _, nc := range ncs.Items {
		if nc.Status.ProviderID == n.Spec.ProviderID {
			return node, nc.Name
		}
	}
	t.Fatalf("node %s has no nodeclaim", node)
	return "", ""
}

// expectTerminated: the Node, its NodeClaim and its instance (for KWOK the
// Node object itself) are gone.
func (e *provisioningEnv) expectTerminated(t *testing.T, node, claim string) {
	t.Helper()
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		for _, o := range []client.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}}} {
			if err := e.Client.Get(e.ctx, client.ObjectKeyFromObject(o), o); client.IgnoreNotFound(err) != nil {
				return false, err
			} else if err == nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("node %s / nodeclaim %s not gone: %v; karpenter log: %s", node, claim, err, e.karpenter.LogPath)
	}
}

// expectWorkloadMoved: all replicas of app run, none on the terminated node,
// and every node is backed by one NodeClaim (no leak, no orphan).
func (e *provisioningEnv) expectWorkloadMoved(t *testing.T, app string, replicas int, from string) {
	t.Helper()
	var last string
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != from {
				running++
			}
		}
		last = fmt.Sprintf("%d of %d pods listed run elsewhere", running, len(pods.Items))
		return running == replicas && len(pods.Items) == replicas, nil
	}); err != nil {
		t.Fatalf("%s pods not rescheduled: %s; karpenter log: %s", app, last, e.karpenter.LogPath)
	}
	e.expectNodesMatchNodeClaims(t)
}

// healthWatcher follows the pods of an app through a watch (every change,
// not samples) and keeps the fewest healthy pods (Ready, not terminating)
// seen at any moment: the PDB's guarantee, observed from outside.
type healthWatcher struct {
	mu      sync.Mutex
	healthy map[string]bool
	fewest  int
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchHealthy(t *testing.T, e *provisioningEnv, app string) *healthWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	w := &healthWatcher{healthy: map[string]bool{}, fewest: -1, cancel: cancel, done: make(chan struct{})}
	pods := e.KubeClient.CoreV1().Pods("default")
	selector := metav1.ListOptions{LabelSelector: "app=" + app}
	list, err := pods.List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	// The list is one moment: record it whole before counting.
	for i := range list.Items {
		w.record(&list.Items[i], false)
	}
	w.count()
	rv := list.ResourceVersion
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			opts := selector
			opts.ResourceVersion = rv
			opts.AllowWatchBookmarks = true
			wi, err := pods.Watch(ctx, opts)
			if err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("watching pods: %w", err))
				}
				return
			}
			for ev := range wi.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					if ev.Type == watch.Error && ctx.Err() == nil {
						w.fail(fmt.Errorf("watch error: %v", ev.Object))
						wi.Stop()
						return
					}
					continue
				}
				rv = p.ResourceVersion
				w.observe(p, ev.Type == watch.Deleted)
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

// observe records one change and counts the healthy pods after it.
func (w *healthWatcher) observe(p *corev1.Pod, deleted bool) {
	w.record(p, deleted)
	w.count()
}

func (w *healthWatcher) record(p *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if deleted {
		delete(w.healthy, p.Name)
	} else {
		w.healthy[p.Name] = ready && p.DeletionTimestamp == nil
	}
}

func (w *healthWatcher) count() {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, h := range w.healthy {
		if h {
			n++
		}
	}
	if w.fewest < 0 || n < w.fewest {
		w.fewest = n
	}
}

func (w *healthWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *healthWatcher) stop() {
	w.cancel()
	<-w.done
}

func (w *healthWatcher) min() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fewest
}

// expectAtLeast stops the watch and fails the test if fewer than n pods were
// ever healthy at once.
func (w *healthWatcher) expectAtLeast(t *testing.T, n int) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.fewest < n {
		t.Fatalf("PDB violated: only %d healthy pods at one moment, the PDB requires %d", w.fewest, n)
	}
}
