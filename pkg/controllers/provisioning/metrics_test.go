package provisioning_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// histogramCount is how many observations a histogram series holds.
func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestSchedulerMetricsOfABatch: one batch of two pods, one of which no
// instance type fits, observes one scheduling duration, leaves one
// unschedulable pod counted and the queue empty once the simulation ended,
// and exports the NodePool's limits.
func TestSchedulerMetricsOfABatch(t *testing.T) {
	f := newFixture(t)
	np := nodePool("default", "default")
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), np, pendingPod("fits", "1"), pendingPod("huge", "500"))

	duration := provisioning.SchedulingDuration.WithLabelValues("provisioner")
	before := histogramCount(t, duration)
	provisioning.UnschedulablePods.WithLabelValues("provisioner").Set(99)

	res := f.schedule(t)
	if len(res.Solve.PodErrors) != 1 || len(res.NodeClaims) != 1 {
		t.Fatalf("want 1 nodeclaim and 1 unschedulable pod, got %d and %v", len(res.NodeClaims), res.Solve.PodErrors)
	}
	if got := histogramCount(t, duration); got != before+1 {
		t.Errorf("karpenter_scheduler_scheduling_duration_seconds{controller=provisioner} count %d, want %d", got, before+1)
	}
	if got := testutil.ToFloat64(provisioning.UnschedulablePods.WithLabelValues("provisioner")); got != 1 {
		t.Errorf("karpenter_scheduler_unschedulable_pods_count %v, want 1", got)
	}
	// The per-run gauges exist only while a run is in progress.
	for _, name := range []string{"karpenter_scheduler_queue_depth", "karpenter_scheduler_unfinished_work_seconds"} {
		if n := gatheredSeries(t, name); n != 0 {
			t.Errorf("%s has %d series after the simulation, want none", name, n)
		}
	}
	if got := testutil.ToFloat64(provisioning.PendingPodsByEffectiveZone.WithLabelValues("provisioner", "flexible")); got != 2 {
		t.Errorf("karpenter_scheduler_pending_pods_by_effective_zone_count{zone=flexible} %v, want 2", got)
	}
	if got := testutil.ToFloat64(provisioning.NodePoolLimit.WithLabelValues("default", "cpu")); got != 64 {
		t.Errorf("karpenter_nodepools_limit{nodepool=default,resource_type=cpu} %v, want 64", got)
	}
	if got := testutil.ToFloat64(provisioning.NodePoolLimit.WithLabelValues("default", "memory")); got != 256*1024*1024*1024 {
		t.Errorf("karpenter_nodepools_limit{nodepool=default,resource_type=memory} %v, want 256Gi", got)
	}
	// Only the limits the NodePool sets are series: cpu and memory.
	if got := testutil.CollectAndCount(provisioning.NodePoolLimit); got != 2 {
		t.Errorf("%d karpenter_nodepools_limit series, want 2", got)
	}
}

// gatheredSeries counts the series of a family in controller-runtime's registry.
func gatheredSeries(t *testing.T, name string) int {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
