package nodepoolcost_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/nodepoolcost"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// priced is a cloud provider that only lists instance types.
type priced struct {
	cloudprovider.CloudProvider
	its []*scheduling.InstanceType
	err error
}

func (p *priced) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return p.its, p.err
}

func claim(name, pool, itype, zone, ct string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}}}
	for k, val := range map[string]string{corev1.LabelInstanceTypeStable: itype, corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: ct} {
		if val != "" {
			nc.Labels[k] = val
		}
	}
	return nc
}

// The cost of a NodePool is the sum of its NodeClaims' offering prices; a
// NodeClaim without a price counts one tracker error, once, however many
// refreshes see it; a NodePool whose types cannot be listed keeps its value,
// and a deleted NodePool's series goes.
func TestNodePoolCostAndTrackerErrors(t *testing.T) {
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()), nil)
	cluster.UpdateNodePool(&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	cp := &priced{its: []*scheduling.InstanceType{{Name: "m5.large", Offerings: []scheduling.Offering{
		{Zone: "z1", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "z1", CapacityType: "spot", Price: 0.04, Available: true},
	}}}}
	reg := prometheus.NewRegistry()
	e, err := nodepoolcost.New(cluster, cp, reg)
	if err != nil {
		t.Fatal(err)
	}
	cluster.UpdateNodeClaim(claim("one", "a", "m5.large", "z1", "on-demand"))
	cluster.UpdateNodeClaim(claim("two", "a", "m5.large", "z1", "spot"))
	cluster.UpdateNodeClaim(claim("pending", "a", "", "", ""))
	ctx := context.Background()
	e.Refresh(ctx)
	e.Refresh(ctx)
	costOf := func(pool string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "karpenter_nodepools_cost_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == pool {
					return m.GetGauge().GetValue()
				}
			}
		}
		return -1
	}
	if got := costOf("a"); got < 0.1359 || got > 0.1361 {
		t.Errorf("cost of a %v, want 0.136", got)
	}
	if n := testutil.CollectAndCount(reg, "karpenter_nodepools_cost_tracker_errors_total"); n != 1 {
		t.Fatalf("%d error series, want 1", n)
	}
	errorsOf := func() float64 {
		families, _ := reg.Gather()
		for _, f := range families {
			if f.GetName() == "karpenter_nodepools_cost_tracker_errors_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	if got := errorsOf(); got != 1 {
		t.Errorf("tracker errors %v after two refreshes of one unpriced NodeClaim, want 1", got)
	}

	cp.err = errors.New("throttled")
	e.Refresh(ctx)
	if got := costOf("a"); got < 0.1359 || got > 0.1361 {
		t.Errorf("cost of a while its types cannot be listed %v, want the last value 0.136", got)
	}
	cp.err = nil
	cluster.DeleteNodePool("a")
	e.Refresh(ctx)
	if got := costOf("a"); got != -1 {
		t.Errorf("a deleted NodePool still has a cost series (%v)", got)
	}
}
