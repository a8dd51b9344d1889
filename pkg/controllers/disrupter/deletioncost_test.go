package disrupter_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/deletioncost"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func rsPod(t *testing.T, f *fixture, name, node string, opts ...fixtures.PodOption) *corev1.Pod {
	t.Helper()
	p := fixtures.Pod(name, append([]fixtures.PodOption{fixtures.OnNode(node), fixtures.WithRequests("cpu", "1", "memory", "256Mi"), fixtures.WithPhase(corev1.PodRunning),
		fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c9", UID: "rs-uid", Controller: ptr.To(true)})}, opts...)...)
	ExpectApplied(f.ctx, t, testEnv.Client, p)
	return p
}

// The deletion-cost controller writes each ranked node's ReplicaSet pods their
// rank (-n .. -1, the node disruption would take first lowest), removes the
// annotation from the pods of nodes disruption would not take, counts its
// writes, and writes nothing again while nothing changes.
func TestPodDeletionCostWrittenFromTheRanking(t *testing.T) {
	f := newFixture(t)
	f.node(t, "a", "c-4x-amd64-linux")
	f.node(t, "b", "c-4x-amd64-linux")
	f.node(t, "kept", "c-4x-amd64-linux", func(nc *v1.NodeClaim) { nc.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"} })
	pa := rsPod(t, f, "pa", "a")
	pb := rsPod(t, f, "pb", "b")
	pk := rsPod(t, f, "pk", "kept", fixtures.WithAnnotations(map[string]string{corev1.PodDeletionCost: "7"}))
	f.sync(t)
	input := func(ctx context.Context) (*disruption.Input, error) {
		in, _, err := disrupter.BuildInput(ctx, disrupter.InputSources{Kube: testEnv.Client, Cluster: f.cluster, Provisioner: f.prov, CloudProvider: f.cp,
			Cache: scheduling.NewCache(), Now: f.clock.Now(), Options: disruption.Options{PodDeletionCostManagement: true}})
		return in, err
	}
	ctrl := deletioncost.NewController(testEnv.Client, f.cluster, input, f.clock)
	updated := deletioncost.PodAnnotationWritesTotal.WithLabelValues(deletioncost.ResultUpdated)
	before := testutil.ToFloat64(updated)

	n, err := ctrl.Reconcile(f.ctx)
	if err != nil || n != 3 {
		t.Fatalf("first cycle: %d writes, %v; want 3", n, err)
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want string
	}{{pa, "-2"}, {pb, "-1"}, {pk, ""}} {
		got := ExpectExists(f.ctx, t, testEnv.Client, c.pod.DeepCopy()).Annotations[corev1.PodDeletionCost]
		if got != c.want {
			t.Errorf("pod %s: pod-deletion-cost %q, want %q", c.pod.Name, got, c.want)
		}
	}
	if got := testutil.ToFloat64(updated); got != before+3 {
		t.Errorf("pod_annotation_writes_total{updated} %v -> %v, want +3", before, got)
	}
	f.sync(t)
	if n, err := ctrl.Reconcile(f.ctx); err != nil || n != 0 {
		t.Fatalf("second cycle over the written pods: %d writes, %v; want none", n, err)
	}
}
