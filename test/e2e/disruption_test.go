package e2e_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// The voluntary disruption tests: Karpenter runs against the local cluster
// with its real timing (a pass every 10 s, 15 s validation before emptiness
// and consolidation act), and an invariant watcher (invariants_test.go)
// follows every test: no PDB violated, no do-not-disrupt pod evicted, never
// more nodes of the NodePool disrupting than its budget allows.

// TestDisruptionEmptiness: a Deployment of six pods, one per node (hostname
// anti-affinity), is scaled down to two. The four nodes left empty are
// removed, two at a time as the budget ({nodes: "2"}) allows, and the two
// nodes still running pods stay untouched.
func TestDisruptionEmptiness(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	pool := disruptionPool("default", "0s", "2")
	// WhenEmpty: the test is about emptiness; the two busy nodes must stay
	// whatever consolidation might find.
	pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(kit.Deployment("default", "web", 6, "1", "256Mi", false)))
	e.waitRunning(t, 6, 2*time.Minute)
	if n := len(e.nodesOf(t, "default")); n != 6 {
		t.Fatalf("%d nodes for six pods with hostname anti-affinity, want 6", n)
	}

	start := time.Now()
	e.scale(t, "web", 2)
	e.waitRunning(t, 2, time.Minute)
	busy := e.nodesRunning(t, "web")
	if len(busy) != 2 {
		t.Fatalf("the two remaining pods run on %d nodes, want 2: %v", len(busy), busy)
	}

	var last string
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		nodes := e.nodesOf(t, "default")
		names := nodeNames(nodes)
		last = fmt.Sprint(names)
		// The NodeClaims too: a Node is deleted before its NodeClaim lets go.
		return len(nodes) == 2 && busy[names[0]] && busy[names[1]] && len(e.claimsByNode(t)) == 2, nil
	}); err != nil {
		t.Fatalf("empty nodes not removed (nodes left %s, busy %v); karpenter log %s", last, busy, e.karpenter.LogPath)
	}
	t.Logf("four empty nodes removed %s after the scale-down", time.Since(start).Round(time.Second))

	// The busy nodes' NodeClaims were never deleted nor tainted for
	// disruption, and the pods never moved.
	for name, nc := range e.claimsByNode(t) {
		if !busy[name] {
			t.Errorf("node %s (nodeclaim %s) is left but ran no pod", name, nc)
			continue
		}
		if seen := w.NodeClaim(nc); seen == nil || !seen.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s of busy node %s was deleted", nc, name)
		}
	}
	if got := e.nodesRunning(t, "web"); fmt.Sprint(got) != fmt.Sprint(busy) {
		t.Errorf("web pods moved from %v to %v", busy, got)
	}
	e.expectNodesMatchNodeClaims(t)
	if got := scrapeCounter(t, e, "karpenter_voluntary_disruption_decisions_total", `reason="empty"`); got < 2 {
		t.Errorf(`karpenter_voluntary_disruption_decisions_total{reason="empty"} = %v, want at least 2 (the budget allows two of four nodes per command)`, got)
	}
	if got := scrapeCounter(t, e, "karpenter_nodeclaims_disrupted_total", `reason="empty"`, `nodepool="default"`); got != 4 {
		t.Errorf(`karpenter_nodeclaims_disrupted_total{reason="empty"} = %v, want 4`, got)
	}
	expectMaxDisrupting(t, w, 2, 2)
	w.Assert(t)
}

// TestDisruptionConsolidation: ten 4-vCPU nodes each run one 1.5-vCPU pod
// (built with a placeholder Deployment that keeps one pod per node while the
// real one is placed, then removed). Once the NodePool consolidates, half the
// nodes go — two pods fit on a node — the hourly price halves, the PDB of the
// Deployment holds throughout, and all ten pods run at the end.
func TestDisruptionConsolidation(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 10
	// Consolidation starts off (Never) while the half-empty layout is built,
	// so that nothing acts on a passing state; budget 50%: five at once.
	pool := disruptionPool("default", v1.Never, "50%")
	pool.Spec.Template.Spec.Requirements = setRequirement(pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"4"}})
	w := startInvariantWatcher(t, e, "default")
	// 2 vCPU + 0.1 overhead only fits a 4-vCPU node; one per node.
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(kit.Deployment("default", "placeholder", replicas, "2", "256Mi", false)))
	e.waitRunning(t, replicas, 3*time.Minute)
	// 1.9 vCPU left per node: the kube-scheduler places one web pod on each.
	e.apply(t, withGrace(kit.Deployment("default", "web", replicas, "1500m", "256Mi", false), 3), maxUnavailablePDB("web", 2))
	e.waitRunning(t, 2*replicas, 2*time.Minute)
	if err := e.Client.Delete(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "placeholder", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, replicas, time.Minute)
	before := e.counts(t)
	if before.Nodes != replicas || len(e.nodesRunning(t, "web")) != replicas {
		t.Fatalf("want %d nodes with one web pod each, have %d nodes, web on %v", replicas, before.Nodes, e.nodesRunning(t, "web"))
	}
	t.Logf("before: %d nodes, $%.4f/h, %v", before.Nodes, before.CostPerHour, before.NodesByType)

	start := time.Now()
	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	})
	var last *kit.Counts
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		if err != nil {
			return false, err
		}
		last = c
		return c.Nodes == replicas/2 && c.NodeClaimsAll == replicas/2 && c.Pods == replicas && c.Running == replicas, nil
	}); err != nil {
		t.Fatalf("not consolidated onto %d nodes with %d pods Running: nodes %d, nodeclaims %v, pods %d running %d; karpenter log %s",
			replicas/2, replicas, last.Nodes, last.NodeClaims, last.Pods, last.Running, e.karpenter.LogPath)
	}
	after := e.counts(t)
	t.Logf("after %s: %d nodes, $%.4f/h, %v", time.Since(start).Round(time.Second), after.Nodes, after.CostPerHour, after.NodesByType)
	if after.CostPerHour >= before.CostPerHour*0.6 {
		t.Errorf("hourly price %.4f after consolidation, want at most 60%% of %.4f", after.CostPerHour, before.CostPerHour)
	}
	e.expectNodesMatchNodeClaims(t)
	if got := scrapeCounter(t, e, "karpenter_voluntary_disruption_decisions_total", `reason="underutilized"`); got < 1 {
		t.Errorf(`karpenter_voluntary_disruption_decisions_total{reason="underutilized"} = %v, want at least 1`, got)
	}
	if w.KarpenterRemovals() == 0 {
		t.Error("the invariant watcher saw no pod removed by Karpenter: it judged nothing")
	}
	expectMaxDisrupting(t, w, 1, 5)
	w.Assert(t)
	expectUpstreamMetricFamilies(t, e, 60)
}

// TestDisruptionDrift: a label added to the NodePool's template drifts every
// node; each is replaced by a node carrying the label, one at a time (budget
// {nodes: "1"}, which the watcher holds Karpenter to), and the Deployment's
// PDB holds throughout.
func TestDisruptionDrift(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 4
	// Consolidation off: the nodes go for drift only.
	pool := disruptionPool("default", v1.Never, "1")
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(withGrace(kit.Deployment("default", "web", replicas, "1", "256Mi", false), 3)), maxUnavailablePDB("web", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	old := e.claimsByNode(t)
	if len(old) != replicas {
		t.Fatalf("%d nodes, want %d", len(old), replicas)
	}

	start := time.Now()
	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "blue"}
	})
	var last string
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		nodes := e.nodesOf(t, "default")
		relabelled := 0
		for _, n := range nodes {
			if n.Labels["team"] == "blue" && !hasDisruptedTaint(&n) {
				relabelled++
			}
		}
		running := e.nodesRunning(t, "web")
		last = fmt.Sprintf("%d nodes, %d relabelled, web Running on %d nodes", len(nodes), relabelled, len(running))
		for n := range running {
			if _, stale := old[n]; stale {
				return false, nil
			}
		}
		return len(nodes) == replicas && relabelled == replicas && len(running) == replicas, nil
	}); err != nil {
		t.Fatalf("drifted nodes not replaced: %s; karpenter log %s", last, e.karpenter.LogPath)
	}
	t.Logf("%d drifted nodes replaced in %s", replicas, time.Since(start).Round(time.Second))
	for node, nc := range old {
		seen := w.NodeClaim(nc)
		if seen == nil || seen.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s of drifted node %s was not deleted", nc, node)
			continue
		}
		if c := seen.StatusConditions().Get(v1.ConditionTypeDrifted); !c.IsTrue() {
			t.Errorf("nodeclaim %s was deleted without the Drifted condition", nc)
		}
	}
	expectReplacedBeforeDeleted(t, w, values(old), "default")
	e.waitRunning(t, replicas, time.Minute)
	e.expectNodesMatchNodeClaims(t)
	if got := scrapeCounter(t, e, "karpenter_nodeclaims_disrupted_total", `reason="drifted"`, `nodepool="default"`); got != replicas {
		t.Errorf(`karpenter_nodeclaims_disrupted_total{reason="drifted"} = %v, want %d`, got, replicas)
	}
	expectMaxDisrupting(t, w, 1, 1)
	w.Assert(t)
}

// TestDisruptionMigrationLegacyTaint is the seeds' migration path by drift:
// a new NodePool is created and the old one's template gets the taint
// karpenter.sh/legacy=true:NoSchedule. The old nodes drift, the Deployment
// (with a PDB) moves to nodes of the new pool, the old pool is left without
// nodes, and the PDB and the old pool's budget ({nodes: "1"}) hold throughout.
func TestDisruptionMigrationLegacyTaint(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 3
	w := startInvariantWatcher(t, e, "old")
	e.apply(t, kit.DefaultNodeClass(0), disruptionPool("old", v1.Never, "1"),
		oneper(withGrace(kit.Deployment("default", "svc", replicas, "1", "256Mi", false), 3)), maxUnavailablePDB("svc", 1))
	e.waitRunning(t, replicas, 2*time.Minute)
	oldClaims := e.claimsByNode(t)

	start := time.Now()
	e.apply(t, disruptionPool("new", v1.Never, "1"))
	e.updateNodePool(t, "old", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints,
			corev1.Taint{Key: "karpenter.sh/legacy", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	})
	var last string
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		onNew := 0
		running := e.nodesRunning(t, "svc")
		for name := range running {
			n := &corev1.Node{}
			if err := e.Client.Get(e.ctx, client.ObjectKey{Name: name}, n); err == nil && n.Labels[v1.NodePoolLabelKey] == "new" {
				onNew++
			}
		}
		left := len(e.nodesOf(t, "old"))
		last = fmt.Sprintf("svc Running on %d nodes, %d of them of pool new; %d nodes of pool old left", len(running), onNew, left)
		return onNew == replicas && left == 0, nil
	}); err != nil {
		t.Fatalf("workload not migrated: %s; karpenter log %s", last, e.karpenter.LogPath)
	}
	t.Logf("%d nodes of pool old drifted and the workload moved to pool new in %s", len(oldClaims), time.Since(start).Round(time.Second))
	e.waitRunning(t, replicas, time.Minute)
	ncs, _ := e.expectNodesMatchNodeClaims(t)
	for _, nc := range ncs {
		if pool := nc.Labels[v1.NodePoolLabelKey]; pool != "new" {
			t.Errorf("nodeclaim %s of pool %q left after the migration", nc.Name, pool)
		}
	}
	for _, nc := range oldClaims {
		if seen := w.NodeClaim(nc); seen == nil || !seen.StatusConditions().Get(v1.ConditionTypeDrifted).IsTrue() {
			t.Errorf("nodeclaim %s of pool old went without the Drifted condition", nc)
		}
	}
	expectReplacedBeforeDeleted(t, w, values(oldClaims), "new")
	if w.KarpenterRemovals() == 0 {
		t.Error("the invariant watcher saw no pod removed by Karpenter: it judged nothing")
	}
	expectMaxDisrupting(t, w, 1, 1)
	w.Assert(t)
}

// TestDisruptionDoNotDisruptPod: three on-demand nodes, each running a web
// pod; one also runs a small pod annotated karpenter.sh/do-not-disrupt:
// "true". When web scales to zero, the two empty nodes are removed, while the
// node of the guarded pod, underused as it is, stays: its NodeClaim carries
// the DisruptionBlocked condition and an event names the pod. Then the
// annotation is taken off the pod, and the same node is consolidated (replaced
// by a cheaper one): the annotation, nothing else, had held it.
func TestDisruptionDoNotDisruptPod(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	// On-demand only: a 2-vCPU on-demand node running one 500m pod has a
	// cheaper replacement (1 vCPU). Spot would need the SpotToSpotConsolidation
	// gate, and the node would stay whatever the annotation said.
	pool := disruptionPool("default", "0s", "100%")
	pool.Spec.Template.Spec.Requirements = setRequirement(pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(withGrace(kit.Deployment("default", "web", 3, "1", "256Mi", false), 3)))
	e.waitRunning(t, 3, 2*time.Minute)
	guarded := kit.Deployment("default", "guarded", 1, "500m", "128Mi", false)
	guarded.Spec.Template.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	e.apply(t, guarded)
	e.waitRunning(t, 4, time.Minute)
	if c := e.counts(t); c.Nodes != 3 {
		t.Fatalf("%d nodes, want the three of web (the guarded pod fits beside a web pod)", c.Nodes)
	}
	var guardedNode string
	for n := range e.nodesRunning(t, "guarded") {
		guardedNode = n
	}
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "guarded"}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("guarded pods: %v (%v)", pods.Items, err)
	}
	guardedPod := pods.Items[0].Name
	claim := e.claimsByNode(t)[guardedNode]

	start := time.Now()
	e.scale(t, "web", 0)
	var last string
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		names := nodeNames(e.nodesOf(t, "default"))
		nc := &v1.NodeClaim{}
		if err := e.Client.Get(e.ctx, client.ObjectKey{Name: claim}, nc); err != nil {
			return false, err
		}
		cond := nc.StatusConditions().Get("DisruptionBlocked") // ours, see pkg/controllers/disrupter
		last = fmt.Sprintf("nodes %v, DisruptionBlocked %+v", names, cond)
		return len(names) == 1 && names[0] == guardedNode && cond.IsTrue() &&
			cond.Reason == "DoNotDisrupt" && strings.Contains(cond.Message, guardedPod), nil
	}); err != nil {
		t.Fatalf("want only node %s left, its nodeclaim %s DisruptionBlocked by pod %s: %s; karpenter log %s",
			guardedNode, claim, guardedPod, last, e.karpenter.LogPath)
	}
	t.Logf("empty nodes removed and node %s held by %s after %s", guardedNode, guardedPod, time.Since(start).Round(time.Second))
	e.expectEvent(t, "NodeClaim", claim, "DisruptionBlocked", guardedPod)
	e.expectEvent(t, "Node", guardedNode, "DisruptionBlocked", guardedPod)
	if seen := w.NodeClaim(claim); seen == nil || !seen.DeletionTimestamp.IsZero() {
		t.Errorf("nodeclaim %s of the guarded pod's node was deleted", claim)
	}
	e.waitRunning(t, 1, time.Minute)
	if got := e.nodesRunning(t, "guarded"); !got[guardedNode] {
		t.Errorf("guarded pod moved from %s to %v", guardedNode, got)
	}
	before := e.counts(t)

	// Control: without the annotation the node goes.
	start = time.Now()
	patch := []byte(`{"metadata":{"annotations":{"` + v1.DoNotDisruptAnnotationKey + `":null}}}`)
	if err := e.Client.Patch(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: guardedPod}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		names := nodeNames(e.nodesOf(t, "default"))
		running := e.nodesRunning(t, "guarded")
		last = fmt.Sprintf("nodes %v, guarded Running on %v", names, running)
		return len(names) == 1 && names[0] != guardedNode && running[names[0]], nil
	}); err != nil {
		t.Fatalf("node %s not consolidated once the annotation was removed: %s; karpenter log %s", guardedNode, last, e.karpenter.LogPath)
	}
	after := e.counts(t)
	t.Logf("without the annotation node %s was replaced in %s: $%.4f/h -> $%.4f/h (%v)", guardedNode,
		time.Since(start).Round(time.Second), before.CostPerHour, after.CostPerHour, after.NodesByType)
	if after.CostPerHour >= before.CostPerHour {
		t.Errorf("replacement costs %.4f/h, not less than the %.4f/h of node %s", after.CostPerHour, before.CostPerHour, guardedNode)
	}
	e.expectNodesMatchNodeClaims(t)
	expectMaxDisrupting(t, w, 1, 2)
	w.Assert(t)
}

// disruptionPool is kit.DefaultNodePool (nodes of at most 4 vCPUs) with the
// given consolidateAfter and one budget of nodes (no reasons, no schedule).
func disruptionPool(name, consolidateAfter, budget string) *v1.NodePool {
	np := kit.DefaultNodePool(name, "default", 4)
	np.Spec.Disruption = v1.Disruption{
		ConsolidateAfter:    v1.MustParseNillableDuration(consolidateAfter),
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		Budgets:             []v1.Budget{{Nodes: budget}},
	}
	return np
}

// setRequirement replaces the requirement on r's key (or adds it).
func setRequirement(reqs []v1.NodeSelectorRequirementWithMinValues, r v1.NodeSelectorRequirementWithMinValues) []v1.NodeSelectorRequirementWithMinValues {
	out := []v1.NodeSelectorRequirementWithMinValues{r}
	for _, cur := range reqs {
		if cur.Key != r.Key {
			out = append(out, cur)
		}
	}
	return out
}

// withGrace gives a Deployment's pods a termination grace period: the local
// cluster's KWOK removes a terminating pod only when it ends, as a
// container with a slow preStop hook would, so drains really wait.
func withGrace(d *appsv1.Deployment, seconds int64) *appsv1.Deployment {
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(seconds)
	return d
}

// oneper gives a Deployment's pods required hostname anti-affinity among
// themselves: one pod per node.
func oneper(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
	return d
}

// scale sets a Deployment's replicas.
func (e *provisioningEnv) scale(t testing.TB, name string, replicas int32) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := e.Client.Get(e.ctx, client.ObjectKey{Namespace: "default", Name: name}, d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		return e.Client.Update(e.ctx, d)
	}); err != nil {
		t.Fatalf("scaling %s to %d: %v", name, replicas, err)
	}
}

// updateNodePool applies change to the stored NodePool (retrying conflicts).
func (e *provisioningEnv) updateNodePool(t testing.TB, name string, change func(*v1.NodePool)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &v1.NodePool{}
		if err := e.Client.Get(e.ctx, client.ObjectKey{Name: name}, np); err != nil {
			return err
		}
		change(np)
		return e.Client.Update(e.ctx, np)
	}); err != nil {
		t.Fatalf("updating nodepool %s: %v", name, err)
	}
}

// nodesOf lists the nodes of a NodePool.
func (e *provisioningEnv) nodesOf(t testing.TB, pool string) []corev1.Node {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, nodes, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return nodes.Items
}

func nodeNames(nodes []corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// nodesRunning is the set of nodes running (not terminating) pods of app.
func (e *provisioningEnv) nodesRunning(t testing.TB, app string) map[string]bool {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out[p.Spec.NodeName] = true
		}
	}
	return out
}

// claimsByNode maps every registered node's name to its NodeClaim's.
func (e *provisioningEnv) claimsByNode(t testing.TB) map[string]string {
	t.Helper()
	ncs := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, nc := range ncs.Items {
		if nc.Status.NodeName != "" {
			out[nc.Status.NodeName] = nc.Name
		}
	}
	return out
}

// expectEvent waits for an event from karpenter about the object (kind,
// name) with the reason and a message containing want. Events about
// cluster-scoped objects are recorded in namespace default.
func (e *provisioningEnv) expectEvent(t testing.TB, kind, name, reason, want string) {
	t.Helper()
	var seen []string
	if err := poll(e.ctx, 30*time.Second, func() (bool, error) {
		evs := &corev1.EventList{}
		if err := e.Client.List(e.ctx, evs); err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind != kind || ev.InvolvedObject.Name != name || ev.Source.Component != "karpenter" {
				continue
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason == reason && strings.Contains(ev.Message, want) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("no %s event on %s %s mentioning %q; its events: %q", reason, kind, name, want, seen)
	}
}

// expectMaxDisrupting checks that the watcher saw the NodePool's nodes
// disrupting, between least and most of them at one moment (the budget
// itself is the watcher's check; this shows it had something to check).
func expectMaxDisrupting(t testing.TB, w *invariantWatcher, least, most int) {
	t.Helper()
	w.mu.Lock()
	got := w.maxDisrupting
	w.mu.Unlock()
	if got < least || got > most {
		t.Errorf("at most %d nodes of NodePool %s disrupting at once, want between %d and %d", got, w.nodePool, least, most)
	}
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// expectReplacedBeforeDeleted: drift replaces before it drains. The k-th of
// the old NodeClaims to be deleted was deleted no earlier than the k-th
// replacement (a NodeClaim of pool that is not one of the old ones) became
// Initialized, as the watcher saw them (API timestamps, whole seconds).
func expectReplacedBeforeDeleted(t testing.TB, w *invariantWatcher, old []string, pool string) {
	t.Helper()
	isOld := map[string]bool{}
	var deleted []time.Time
	for _, name := range old {
		isOld[name] = true
		nc := w.NodeClaim(name)
		if nc == nil || nc.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s was not deleted", name)
			continue
		}
		deleted = append(deleted, nc.DeletionTimestamp.Time)
	}
	var initialized []time.Time
	for name := range seenClaims(w, pool) {
		if isOld[name] {
			continue
		}
		if c := w.NodeClaim(name).StatusConditions().Get(v1.ConditionTypeInitialized); c.IsTrue() {
			initialized = append(initialized, c.LastTransitionTime.Time)
		}
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].Before(deleted[j]) })
	sort.Slice(initialized, func(i, j int) bool { return initialized[i].Before(initialized[j]) })
	for k, d := range deleted {
		if k >= len(initialized) || initialized[k].After(d) {
			t.Errorf("old nodeclaim #%d deleted at %s before replacement #%d was initialized (replacements initialized at %v)",
				k+1, d.Format(time.TimeOnly), k+1, initialized)
			return
		}
	}
}
