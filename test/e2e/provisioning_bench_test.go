package e2e_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// BenchmarkProvisioning1000Pods: 1,000 pending pods of a mixed workload
// (mixedWorkload) on the local cluster → time until the last NodeClaim is
// created and until every pod runs, with the controller's CPU time and peak
// memory, and a table of where the time went phase by phase. Run it with
//
//	go test ./test/e2e -run '^$' -bench Provisioning1000Pods -benchtime 1x -timeout 30m
//
// One NodePool of linux instances up to 32 vCPU, either architecture, spot or
// on-demand. kube-scheduler scores nodes MostAllocated (see
// localcluster.Options): with its default it spreads the first pods over
// every new node and displaces the pods Karpenter planned there.
func BenchmarkProvisioning1000Pods(b *testing.B) {
	opts := localcluster.Options{SchedulerMostAllocated: true, AuditNodeClaims: true,
		Profiling: os.Getenv("BENCH_APISERVER_PROFILE") != ""}
	if os.Getenv("BENCH_CLUSTER_TUNING") == "on" {
		opts.APIServerGOGC, opts.ClientNice = benchAPIServerGOGC, benchClientNice
	}
	e := startProvisioningWith(b, opts)
	np := kit.DefaultNodePool("default", "default", 32)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		np.Spec.Template.Spec.Requirements[0], // linux
		np.Spec.Template.Spec.Requirements[2], // spot or on-demand
		np.Spec.Template.Spec.Requirements[3], // ≤ 32 vCPU
	}
	e.apply(b, kit.DefaultNodeClass(0), np)
	if err := kit.NodeClassReady(e.ctx, e.Client, "default", time.Minute); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		deps := mixedWorkload()
		runWorkload(b, e, deps, 20*time.Minute).report(b, "1000 pods")
		if i < b.N-1 {
			cleanupWorkload(b, e, deps)
		}
		b.StartTimer()
	}
}

// Local-cluster tuning the 1,000-pod benchmark tries with
// BENCH_CLUSTER_TUNING=on (see localcluster.Options): off by default, since
// four runs with it at load 4-8 (worst batch 0.36-1.26 s) were within the
// spread of six without it (0.36-1.64 s).
const (
	benchAPIServerGOGC = 400
	benchClientNice    = 5
)

// startProvisioningWith is startProvisioning on a cluster started with opts.
func startProvisioningWith(t testing.TB, opts localcluster.Options) *provisioningEnv {
	t.Helper()
	bin := karpenterBinary(t)
	c := localcluster.StartWith(t, opts)
	e := &provisioningEnv{Cluster: c, ctx: context.Background()}
	if err := kit.InstallCRDs(e.ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	e.startKarpenter(t, bin)
	return e
}

// cleanupWorkload removes the Deployments and every NodeClaim (whose finalizer
// removes the node) before the next iteration.
func cleanupWorkload(b *testing.B, e *provisioningEnv, deps []*appsv1.Deployment) {
	for _, d := range deps {
		if err := e.Client.Delete(e.ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Client.DeleteAllOf(e.ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		b.Fatal(err)
	}
	if err := e.Client.DeleteAllOf(e.ctx, &v1.NodeClaim{}); err != nil {
		b.Fatal(err)
	}
	if err := poll(e.ctx, 5*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		return err == nil && c.Pods == 0 && c.NodeClaimsAll == 0 && c.Nodes == 0, err
	}); err != nil {
		b.Fatal("cluster not emptied between iterations")
	}
}
