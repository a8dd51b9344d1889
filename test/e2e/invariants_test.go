package e2e_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// invariantWatcher watches pods, PodDisruptionBudgets, Nodes, NodeClaims and
// one NodePool of the local cluster for the length of a disruption test and
// records every moment Karpenter broke one of the promises it makes to
// workloads:
//
//  1. A PodDisruptionBudget is never pushed below its desired healthy count by
//     a pod Karpenter removed: when a pod that was Running and Ready (on a node
//     that exists) leaves because of Karpenter, the PDB's remaining healthy
//     pods must still meet minAvailable (or expected - maxUnavailable).
//  2. A pod annotated karpenter.sh/do-not-disrupt=true is not removed by
//     Karpenter from a node whose NodeClaim is not expired.
//  3. The NodePool's nodes tainted karpenter.sh/disrupted at one time (expired
//     ones aside: expiration is not budgeted) never exceed the NodePool's
//     budgets: in total against the budgets for every reason, and per reason
//     (the NodeClaim's DisruptionReason condition) against that reason's.
//     Budgets with a schedule are not checked; "N" and "N%" (of the NodePool's
//     current nodes, rounded up) are.
//
// Pods removed after their NodeClaim's terminationGracePeriod ran out
// (karpenter.sh/nodeclaim-termination-timestamp passed) are exempt from 1 and
// 2: there PDBs and do-not-disrupt yield by design.
//
// A pod leaves "because of Karpenter" when the API server marked it with a
// DisruptionTarget condition for an eviction (EvictionByEvictionAPI) or for
// losing its node (DeletionByPodGC, DeletionByTaintManager), or when its node
// is deleted or being deleted. A pod leaves when it starts terminating,
// finishes (the pod garbage collector fails pods of a vanished node), is
// deleted outright, or when its node object is deleted under it (it serves
// nothing from then on). A ReplicaSet scaling down deletes without such a mark
// on a live node and is not Karpenter's doing.
//
// The watcher keeps its own view of the objects (filled by informer events),
// so the checks are plain functions of that view and are unit-tested below
// without a cluster.
type invariantWatcher struct {
	nodePool string
	now      func() time.Time

	mu         sync.Mutex
	pods       map[types.NamespacedName]*corev1.Pod
	pdbs       map[types.NamespacedName]*policyv1.PodDisruptionBudget
	nodes      map[string]*corev1.Node
	claims     map[string]*v1.NodeClaim // by name; kept after deletion
	claimsGone map[string]bool          // NodeClaims deleted (their last state stays in claims)
	pool       *v1.NodePool
	departed   map[types.UID]bool
	// Indexes over the view, so that the watcher's cost per event does not
	// grow with the fleet (BenchmarkScaleFleet runs it over thousands of
	// nodes and tens of thousands of pods): the pods bound to each node, the
	// NodeClaim last seen for each node, and the NodePool's nodes and those
	// of them tainted karpenter.sh/disrupted.
	podsOnNode  map[string]map[types.NamespacedName]bool
	claimByNode map[string]*v1.NodeClaim
	poolNodes   map[string]bool
	disrupted   map[string]bool
	violations  []string
	seen        map[string]bool // violation keys already recorded
	reported    int             // violations already failed a test (Assert)

	// What was observed, so a test can show the watcher saw the disruption
	// it judged.
	karpenterRemovals int
	maxDisrupting     int
}

func newInvariantWatcher(nodePool string, now func() time.Time) *invariantWatcher {
	return &invariantWatcher{
		nodePool:   nodePool,
		now:        now,
		pods:       map[types.NamespacedName]*corev1.Pod{},
		pdbs:       map[types.NamespacedName]*policyv1.PodDisruptionBudget{},
		nodes:      map[string]*corev1.Node{},
		claims:     map[string]*v1.NodeClaim{},
		claimsGone: map[string]bool{},
		departed:   map[types.UID]bool{},
		seen:       map[string]bool{},

		podsOnNode:  map[string]map[types.NamespacedName]bool{},
		claimByNode: map[string]*v1.NodeClaim{},
		poolNodes:   map[string]bool{},
		disrupted:   map[string]bool{},
	}
}

// startInvariantWatcher starts watching the cluster of e until the test ends.
// Call w.Assert(t) at the end of the test; the watcher asserts once more
// after it stopped (t.Cleanup), so a violation seen after the body still
// fails the test.
func startInvariantWatcher(t testing.TB, e *provisioningEnv, nodePool string) *invariantWatcher {
	t.Helper()
	w := newInvariantWatcher(nodePool, time.Now)
	// Registered before the cleanup that stops the watcher, so it runs after it.
	w.assertOnCleanup(t)
	c, err := cache.New(e.Config, cache.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { w.podChanged(nil, asPod(o)) },
			UpdateFunc: func(o, n interface{}) { w.podChanged(asPod(o), asPod(n)) },
			DeleteFunc: func(o interface{}) { w.podDeleted(asPod(o)) },
		}},
		{&policyv1.PodDisruptionBudget{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { w.pdbChanged(asPDB(o), false) },
			UpdateFunc: func(_, n interface{}) { w.pdbChanged(asPDB(n), false) },
			DeleteFunc: func(o interface{}) { w.pdbChanged(asPDB(o), true) },
		}},
		{&corev1.Node{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { w.nodeChanged(asNode(o), false) },
			UpdateFunc: func(_, n interface{}) { w.nodeChanged(asNode(n), false) },
			DeleteFunc: func(o interface{}) { w.nodeChanged(asNode(o), true) },
		}},
		{&v1.NodeClaim{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { w.nodeClaimChanged(asNodeClaim(o)) },
			UpdateFunc: func(_, n interface{}) { w.nodeClaimChanged(asNodeClaim(n)) },
			DeleteFunc: func(o interface{}) { w.nodeClaimDeleted(asNodeClaim(o)) },
		}},
		{&v1.NodePool{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { w.nodePoolChanged(asNodePool(o)) },
			UpdateFunc: func(_, n interface{}) { w.nodePoolChanged(asNodePool(n)) },
		}},
	}
	for _, h := range handlers {
		inf, err := c.GetInformer(ctx, h.obj)
		if err != nil {
			cancel()
			t.Fatalf("informer for %T: %v", h.obj, err)
		}
		if _, err := inf.AddEventHandler(h.h); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("invariant watcher: %v", err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("invariant watcher: caches did not sync")
	}
	return w
}

// assertOnCleanup makes the end of t assert the watcher: violations seen
// after the test body (or with no Assert call at all) still fail it.
func (w *invariantWatcher) assertOnCleanup(t testing.TB) {
	t.Cleanup(func() { w.Assert(t) })
}

// Assert fails the test for every violation recorded since the last Assert
// and logs what the watcher observed.
func (w *invariantWatcher) Assert(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations[w.reported:] {
		t.Errorf("invariant violated: %s", v)
	}
	w.reported = len(w.violations)
	t.Logf("invariant watcher: %d pods removed by Karpenter, at most %d nodes of NodePool %s disrupting at once (not counting expired), %d violations",
		w.karpenterRemovals, w.maxDisrupting, w.nodePool, len(w.violations))
}

// KarpenterRemovals is how many pods the watcher saw Karpenter remove.
func (w *invariantWatcher) KarpenterRemovals() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.karpenterRemovals
}

// Violations is how many violations the watcher recorded so far.
func (w *invariantWatcher) Violations() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.violations)
}

// NodeClaim returns the last state seen of a NodeClaim (also after it is
// gone, with its deletionTimestamp).
func (w *invariantWatcher) NodeClaim(name string) *v1.NodeClaim {
	w.mu.Lock()
	defer w.mu.Unlock()
	if nc, ok := w.claims[name]; ok {
		return nc.DeepCopy()
	}
	return nil
}

func (w *invariantWatcher) violate(key, format string, args ...interface{}) {
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.violations = append(w.violations, w.now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (w *invariantWatcher) podChanged(old, cur *corev1.Pod) {
	if cur == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.storePod(cur)
	if old != nil && !gone(old) && gone(cur) && !w.departed[cur.UID] {
		w.departure(cur, w.healthy(old))
	}
}

func (w *invariantWatcher) podDeleted(last *corev1.Pod) {
	if last == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(last)
	if known, ok := w.pods[key]; ok && known.UID == last.UID {
		w.unindexPod(key, known)
		delete(w.pods, key)
	}
	if !w.departed[last.UID] {
		// Deleted at once (grace period 0): no terminating phase was seen.
		w.departure(last, last.Status.Phase == corev1.PodRunning && isReady(last))
	}
}

// storePod keeps p in the view and in the index of pods by node.
func (w *invariantWatcher) storePod(p *corev1.Pod) {
	key := client.ObjectKeyFromObject(p)
	if known, ok := w.pods[key]; ok {
		w.unindexPod(key, known)
	}
	w.pods[key] = p
	if p.Spec.NodeName != "" {
		on := w.podsOnNode[p.Spec.NodeName]
		if on == nil {
			on = map[types.NamespacedName]bool{}
			w.podsOnNode[p.Spec.NodeName] = on
		}
		on[key] = true
	}
}

func (w *invariantWatcher) unindexPod(key types.NamespacedName, p *corev1.Pod) {
	if on := w.podsOnNode[p.Spec.NodeName]; on != nil {
		delete(on, key)
		if len(on) == 0 {
			delete(w.podsOnNode, p.Spec.NodeName)
		}
	}
}

// gone: the pod no longer runs, or is on its way out.
func gone(p *corev1.Pod) bool {
	return !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// departure judges a pod that stopped counting: it started terminating,
// finished, was deleted outright, or lost its node. wasHealthy is whether it
// counted for PDBs just before. Each pod is judged once.
func (w *invariantWatcher) departure(p *corev1.Pod, wasHealthy bool) {
	w.departed[p.UID] = true
	cause := w.karpenterCause(p)
	if cause == "" {
		return
	}
	w.karpenterRemovals++
	nc := w.claimOfNode(p.Spec.NodeName)
	if nc != nil && graceElapsed(nc, w.now()) {
		return // past terminationGracePeriod, PDBs and do-not-disrupt yield by design
	}
	if wasHealthy {
		w.checkPDBs(p, cause)
	}
	if nc == nil || !expired(nc, w.now()) {
		w.checkDoNotDisrupt(p, cause) // expiration is forceful for do-not-disrupt pods
	}
}

// graceElapsed: the NodeClaim's terminationGracePeriod has run out.
func graceElapsed(nc *v1.NodeClaim, now time.Time) bool {
	ts, err := time.Parse(time.RFC3339, nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	return err == nil && !now.Before(ts)
}

// karpenterCause says why a departing pod's removal is Karpenter's doing, or "".
func (w *invariantWatcher) karpenterCause(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "EvictionByEvictionAPI", "DeletionByPodGC", "DeletionByTaintManager":
			return c.Reason
		}
	}
	if p.Spec.NodeName == "" {
		return ""
	}
	node, ok := w.nodes[p.Spec.NodeName]
	switch {
	case !ok:
		return "node " + p.Spec.NodeName + " deleted"
	case !node.DeletionTimestamp.IsZero():
		return "node " + p.Spec.NodeName + " being deleted"
	}
	return ""
}

func (w *invariantWatcher) checkPDBs(p *corev1.Pod, cause string) {
	for _, pdb := range w.pdbs {
		if pdb.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		healthyNow, live := 0, 0
		for _, o := range w.pods {
			if o.Namespace != p.Namespace || o.UID == p.UID || !sel.Matches(labels.Set(o.Labels)) {
				continue
			}
			if !gone(o) {
				live++
			}
			if w.healthy(o) {
				healthyNow++
			}
		}
		expected := int(pdb.Status.ExpectedPods)
		if expected == 0 {
			expected = live + 1
		}
		desired, ok := desiredHealthy(pdb, expected)
		if ok && healthyNow < desired {
			// Keyed by the shortfall: pods that leave together (a node
			// deleted under them) make one report, not one per pod.
			w.violate(fmt.Sprintf("pdb/%s/%s/%d/%d", pdb.Namespace, pdb.Name, healthyNow, desired), "PDB %s/%s: pod %s removed (%s) leaving %d healthy pods, below the %d it requires",
				pdb.Namespace, pdb.Name, p.Name, cause, healthyNow, desired)
		}
	}
}

// desiredHealthy is how many pods the PDB keeps Running and Ready out of
// expected, rounding percentages up as the disruption controller does.
func desiredHealthy(pdb *policyv1.PodDisruptionBudget, expected int) (int, bool) {
	switch {
	case pdb.Spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
		return n, err == nil
	case pdb.Spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
		return expected - n, err == nil
	}
	return 0, false
}

func (w *invariantWatcher) checkDoNotDisrupt(p *corev1.Pod, cause string) {
	if p.Annotations[v1.DoNotDisruptAnnotationKey] != "true" {
		return
	}
	w.violate("dnd/"+string(p.UID), "do-not-disrupt pod %s/%s removed (%s) from node %s before its NodeClaim expired or its terminationGracePeriod ran out",
		p.Namespace, p.Name, cause, p.Spec.NodeName)
}

func (w *invariantWatcher) claimOfNode(node string) *v1.NodeClaim {
	if node == "" {
		return nil
	}
	return w.claimByNode[node]
}

func expired(nc *v1.NodeClaim, now time.Time) bool {
	d := nc.Spec.ExpireAfter.Duration
	return d != nil && !now.Before(nc.CreationTimestamp.Add(*d))
}

func (w *invariantWatcher) pdbChanged(pdb *policyv1.PodDisruptionBudget, deleted bool) {
	if pdb == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		delete(w.pdbs, client.ObjectKeyFromObject(pdb))
		return
	}
	w.pdbs[client.ObjectKeyFromObject(pdb)] = pdb
}

func (w *invariantWatcher) nodeChanged(n *corev1.Node, deleted bool) {
	if n == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.poolNodes, n.Name)
	delete(w.disrupted, n.Name)
	if deleted {
		delete(w.nodes, n.Name)
	} else {
		w.nodes[n.Name] = n
		if n.Labels[v1.NodePoolLabelKey] == w.nodePool {
			w.poolNodes[n.Name] = true
			if hasDisruptedTaint(n) {
				w.disrupted[n.Name] = true
			}
		}
	}
	if deleted {
		// The pods still on a node that is gone stop serving now, not when
		// the pod garbage collector gets to them. (A node that is only
		// being deleted is draining: its pods still serve.)
		for key := range w.podsOnNode[n.Name] {
			p := w.pods[key]
			if p != nil && p.Spec.NodeName == n.Name && !w.departed[p.UID] && !gone(p) {
				w.departure(p, p.Status.Phase == corev1.PodRunning && isReady(p))
			}
		}
	}
	w.checkBudget()
}

func (w *invariantWatcher) nodeClaimChanged(nc *v1.NodeClaim) {
	if nc == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claims[nc.Name] = nc
	delete(w.claimsGone, nc.Name) // (a name used again)
	if nc.Status.NodeName != "" {
		w.claimByNode[nc.Status.NodeName] = nc
	}
	w.checkBudget()
}

func (w *invariantWatcher) nodeClaimDeleted(nc *v1.NodeClaim) {
	if nc == nil {
		return
	}
	w.nodeClaimChanged(nc)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claimsGone[nc.Name] = true
}

func (w *invariantWatcher) nodePoolChanged(np *v1.NodePool) {
	if np == nil || np.Name != w.nodePool {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pool = np
	w.checkBudget()
}

// checkBudget counts the NodePool's disrupting nodes against its budgets.
func (w *invariantWatcher) checkBudget() {
	if w.pool == nil {
		return
	}
	total, disrupting := len(w.poolNodes), 0
	byReason := map[v1.DisruptionReason]int{}
	var names []string
	for name := range w.disrupted {
		n := w.nodes[name]
		nc := w.claimOfNode(n.Name)
		if nc != nil && expired(nc, w.now()) {
			continue
		}
		disrupting++
		names = append(names, n.Name)
		if nc != nil {
			if c := nc.StatusConditions().Get(v1.ConditionTypeDisruptionReason); c.IsTrue() {
				byReason[v1.DisruptionReason(c.Reason)]++
			}
		}
	}
	if disrupting > w.maxDisrupting {
		w.maxDisrupting = disrupting
	}
	all, perReason := budgetLimits(w.pool, total)
	sort.Strings(names)
	if all >= 0 && disrupting > all {
		w.violate(fmt.Sprintf("budget/all/%d/%d", disrupting, all), "NodePool %s: %d nodes disrupting at once %v, budget allows %d (of %d nodes)",
			w.nodePool, disrupting, names, all, total)
	}
	for r, n := range byReason {
		if lim, ok := perReason[r]; ok && n > lim {
			w.violate(fmt.Sprintf("budget/%s/%d/%d", r, n, lim), "NodePool %s: %d nodes disrupting for %s at once, budget allows %d (of %d nodes)",
				w.nodePool, n, r, lim, total)
		}
	}
}

// budgetLimits returns the most restrictive unscheduled budget that applies
// to every reason (-1 when none) and the most restrictive per reason.
func budgetLimits(np *v1.NodePool, total int) (int, map[v1.DisruptionReason]int) {
	all := -1
	perReason := map[v1.DisruptionReason]int{}
	lower := func(cur, n int) int {
		if cur < 0 || n < cur {
			return n
		}
		return cur
	}
	for _, b := range np.Spec.Disruption.Budgets {
		if b.Schedule != nil {
			continue
		}
		n, ok := budgetNodes(b.Nodes, total)
		if !ok {
			continue
		}
		reasons := b.Reasons
		if len(reasons) == 0 {
			all = lower(all, n)
			reasons = []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}
		}
		for _, r := range reasons {
			cur, ok := perReason[r]
			if !ok {
				cur = -1
			}
			perReason[r] = lower(cur, n)
		}
	}
	return all, perReason
}

// budgetNodes parses "N" or "N%" (of total, rounded up).
func budgetNodes(s string, total int) (int, bool) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil {
			return 0, false
		}
		return int(math.Ceil(float64(pct) * float64(total) / 100)), true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func hasDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// healthy: counted by a PDB — Running, Ready, not terminating, and on a node
// that still exists (a pod whose node was deleted serves nothing, whatever
// its last reported status says).
func (w *invariantWatcher) healthy(p *corev1.Pod) bool {
	if !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodRunning || !isReady(p) {
		return false
	}
	_, ok := w.nodes[p.Spec.NodeName]
	return ok
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unwrap returns the object of an informer event, looking inside the
// tombstone a delete event carries when the watch missed the final state.
func unwrap(o interface{}) interface{} {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func asPod(o interface{}) *corev1.Pod         { p, _ := unwrap(o).(*corev1.Pod); return p }
func asNode(o interface{}) *corev1.Node       { n, _ := unwrap(o).(*corev1.Node); return n }
func asNodeClaim(o interface{}) *v1.NodeClaim { n, _ := unwrap(o).(*v1.NodeClaim); return n }
func asNodePool(o interface{}) *v1.NodePool   { n, _ := unwrap(o).(*v1.NodePool); return n }
func asPDB(o interface{}) *policyv1.PodDisruptionBudget {
	p, _ := unwrap(o).(*policyv1.PodDisruptionBudget)
	return p
}
