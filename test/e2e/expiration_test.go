package e2e_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// TestExpiration: the nodes of a NodePool with expireAfter 30s are deleted
// once they are 30s old (not before), their pods move to new nodes and run
// again, a PodDisruptionBudget on the Deployment is honoured throughout, and
// Karpenter says why: a Disrupted event and
// karpenter_nodeclaims_disrupted_total{reason="expired"}.
//
// The replacements come from a second NodePool that never expires: once the
// first pool's nodes run the Deployment, its limit is set to zero (limits are
// not part of the template hash, so nothing drifts), which makes the
// outcome a stable state the test can wait for instead of an endless cycle.
func TestExpiration(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	const replicas = 6
	expiring := kit.DefaultNodePool("expiring", "default", 4)
	expiring.Spec.Weight = ptr.To[int32](100)
	expiring.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("30s")
	stable := kit.DefaultNodePool("stable", "default", 4)
	stable.Spec.Weight = ptr.To[int32](1)
	stable.Spec.Template.Spec.ExpireAfter = v1.NeverDuration()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	w := startInvariantWatcher(t, e, "expiring")
	e.apply(t, kit.DefaultNodeClass(0), expiring, stable, pdb, withGrace(kit.Deployment("default", "web", replicas, "1", "1Gi", false), 3))

	e.waitRunning(t, replicas, 3*time.Minute)
	first := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, first, client.MatchingLabels{v1.NodePoolLabelKey: "expiring"}); err != nil {
		t.Fatal(err)
	}
	if len(first.Items) == 0 {
		t.Fatal("no NodeClaims in NodePool expiring")
	}
	// Karpenter writes the NodePool's status (resources, conditions) while it
	// provisions, so the limit goes in with a conflict-retrying update.
	e.updateNodePool(t, expiring.Name, func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resourceZero()}
	})
	t.Logf("%d pods Running on %d NodeClaims of NodePool expiring", replicas, len(first.Items))

	// Every NodeClaim of the expiring pool goes, none before it is 30s old.
	start := time.Now()
	if err := poll(e.ctx, 4*time.Minute, func() (bool, error) {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, l, client.MatchingLabels{v1.NodePoolLabelKey: "expiring"}); err != nil {
			return false, err
		}
		return len(l.Items) == 0, nil
	}); err != nil {
		t.Fatalf("NodeClaims of NodePool expiring still exist %s after their pods ran: %v", time.Since(start).Round(time.Second), err)
	}
	expiredCount := 0
	for name := range seenClaims(w, "expiring") {
		nc := w.NodeClaim(name)
		if nc.DeletionTimestamp.IsZero() {
			t.Errorf("NodeClaim %s vanished without the watcher seeing its deletion", name)
			continue
		}
		age := nc.DeletionTimestamp.Sub(nc.CreationTimestamp.Time)
		if age < 30*time.Second {
			t.Errorf("NodeClaim %s deleted %s after creation, before its expireAfter of 30s", name, age)
		}
		t.Logf("NodeClaim %s deleted at age %s", name, age)
		expiredCount++
	}

	// The Deployment runs again, every pod on a node of the stable pool.
	var last string
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
			return false, err
		}
		onStable := 0
		for _, p := range pods.Items {
			node := &corev1.Node{}
			if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() ||
				e.Client.Get(e.ctx, client.ObjectKey{Name: p.Spec.NodeName}, node) != nil {
				continue
			}
			if node.Labels[v1.NodePoolLabelKey] == "stable" {
				onStable++
			}
		}
		last = fmt.Sprintf("%d pods, %d Running on nodes of NodePool stable", len(pods.Items), onStable)
		return len(pods.Items) == replicas && onStable == replicas, nil
	}); err != nil {
		t.Fatalf("Deployment not back to %d Running pods on replacement nodes: %s; karpenter log %s", replicas, last, e.karpenter.LogPath)
	}
	e.expectNodesMatchNodeClaims(t)

	// Karpenter explains: an event per expired NodeClaim and the counter.
	expectKarpenterEvent(t, e, "Disrupted")
	if got := scrapeCounter(t, e, "karpenter_nodeclaims_disrupted_total", `reason="expired"`, `nodepool="expiring"`); int(got) != expiredCount {
		t.Errorf(`karpenter_nodeclaims_disrupted_total{reason="expired",nodepool="expiring"} = %v, want %d (one per expired NodeClaim)`, got, expiredCount)
	}
	if w.KarpenterRemovals() == 0 {
		t.Error("the invariant watcher saw no pod removed by Karpenter: it judged nothing")
	}
	w.Assert(t)
}

// seenClaims lists the names of the NodeClaims of nodePool the watcher saw.
func seenClaims(w *invariantWatcher, nodePool string) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for name, nc := range w.claims {
		if nc.Labels[v1.NodePoolLabelKey] == nodePool {
			out[name] = true
		}
	}
	return out
}

// scrapeCounter sums the samples of a metric whose labels contain every
// matcher, read from Karpenter's /metrics.
func scrapeCounter(t testing.TB, e *provisioningEnv, name string, matchers ...string) float64 {
	// Lines of series without labels ("name value") match too.
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", e.karpenter.MetricsPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, m := range matchers {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func resourceZero() resource.Quantity { return resource.MustParse("0") }
