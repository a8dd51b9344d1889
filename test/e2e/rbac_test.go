package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// TestChartRBAC runs Karpenter as the karpenter chart's ServiceAccount (a
// token, so exactly the chart's ClusterRoles and Role apply) and the chart's
// settings through a provisioning, a consolidation, a drift and a
// termination. Any request the apiserver refuses fails the test: the client's
// own count of 403 responses must stay zero and no log line may say
// "forbidden".
func TestChartRBAC(t *testing.T) {
	t.Parallel()
	karpenterBinary(t)
	e := &provisioningEnv{Cluster: localcluster.Start(t), ctx: context.Background()}
	if err := kit.InstallCRDs(e.ctx, e.Client); err != nil {
		t.Fatal(err)
	}
	in := installChart(t, e.Client)
	e.karpenter = e.startChartKarpenter(t, in, "karpenter-sa.log")

	// Provisioning: one 1-vCPU pod per node, four nodes.
	const replicas = 4
	pool := disruptionPool("default", v1.Never, "100%")
	e.apply(t, kit.DefaultNodeClass(0), pool, oneper(kit.Deployment("default", "web", replicas, "1", "256Mi", false)), maxUnavailablePDB("web", 1))
	e.waitRunning(t, replicas, 2*time.Minute)

	// Drift: a template label replaces every node (evictions, new NodeClaims).
	old := e.claimsByNode(t)
	e.updateNodePool(t, "default", func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "blue"} })
	var last string
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		nodes := e.nodesOf(t, "default")
		running := e.nodesRunning(t, "web")
		last = fmt.Sprintf("%d nodes, web Running on %d", len(nodes), len(running))
		for n := range running {
			if _, stale := old[n]; stale {
				return false, nil
			}
		}
		return len(nodes) == replicas && len(running) == replicas, nil
	}); err != nil {
		t.Fatalf("drifted nodes not replaced: %s; log %s", last, e.karpenter.LogPath)
	}

	// Consolidation: half the pods go, the emptied nodes are removed.
	e.updateNodePool(t, "default", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s") })
	e.scale(t, "web", replicas/2)
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		cnt := e.counts(t)
		last = fmt.Sprintf("%d nodes, %d nodeclaims, %d running", cnt.Nodes, cnt.NodeClaimsAll, cnt.Running)
		return cnt.Nodes == replicas/2 && cnt.NodeClaimsAll == replicas/2 && cnt.Running == replicas/2, nil
	}); err != nil {
		t.Fatalf("not consolidated to %d nodes: %s; log %s", replicas/2, last, e.karpenter.LogPath)
	}

	// Termination: deleting the NodePool drains (evicts) and removes its nodes.
	// The PDB goes first: with no NodePool left the evicted pods stay Pending,
	// and maxUnavailable 1 would then hold the last node's drain for ever.
	if err := e.Client.Delete(e.ctx, maxUnavailablePDB("web", 1)); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(e.ctx, &v1.NodePool{ObjectMeta: pool.ObjectMeta}); err != nil {
		t.Fatal(err)
	}
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		cnt := e.counts(t)
		last = fmt.Sprintf("%d nodes, %d nodeclaims", cnt.Nodes, cnt.NodeClaimsAll)
		return cnt.Nodes == 0 && cnt.NodeClaimsAll == 0, nil
	}); err != nil {
		t.Fatalf("nodes of the deleted NodePool not terminated: %s; log %s", last, e.karpenter.LogPath)
	}

	// The proof: requests were made, none refused.
	// client-go's results, under upstream's family (operator.New points
	// client-go's hook at it, as upstream's operator does).
	if total := scrapeCounter(t, e, "client_go_request_total"); total < 50 {
		t.Fatalf("client_go_request_total = %v: the 403 count below would prove nothing", total)
	}
	if n := scrapeCounter(t, e, "client_go_request_total", `code="403"`); n != 0 {
		t.Errorf("%v requests refused with 403 under the chart's RBAC; log %s", n, e.karpenter.LogPath)
	}
	log, err := os.ReadFile(e.karpenter.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := forbiddenLines(string(log)); len(lines) > 0 {
		t.Errorf("%d forbidden requests, first:\n%s", len(lines), strings.Join(lines[:min(5, len(lines))], "\n"))
	}
	// The identity was the ServiceAccount's, not the admin's.
	if err := e.Client.Get(e.ctx, client.ObjectKey{Namespace: in.namespace, Name: "karpenter-leader-election"}, &coordinationv1.Lease{}); err != nil {
		t.Errorf("leader election Lease not in the chart's namespace: %v", err)
	}
}
