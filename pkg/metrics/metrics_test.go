package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// TestTerminationMode: the termination_mode label follows the NodeClaim's
// terminationGracePeriod (none, zero, positive).
func TestTerminationMode(t *testing.T) {
	for _, tc := range []struct {
		tgp  *metav1.Duration
		want string
	}{
		{nil, TerminationModeGraceful},
		{&metav1.Duration{}, TerminationModeForceful},
		{&metav1.Duration{Duration: 30 * time.Minute}, TerminationModeEventual},
	} {
		nc := &v1.NodeClaim{Spec: v1.NodeClaimSpec{TerminationGracePeriod: tc.tgp}}
		if got := TerminationMode(nc); got != tc.want {
			t.Errorf("TerminationMode(terminationGracePeriod=%v) = %q, want %q", tc.tgp, got, tc.want)
		}
	}
}

// TestCountDisrupted: one NodeClaim and its pods counted, on the series named
// by the NodeClaim's nodepool and capacity-type labels, the policy given and
// its termination mode.
func TestCountDisrupted(t *testing.T) {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.NodePoolLabelKey: "web", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}},
		Spec:       v1.NodeClaimSpec{TerminationGracePeriod: &metav1.Duration{Duration: time.Hour}},
	}
	series := NodeClaimsDisruptedTotal.WithLabelValues("underutilized", "web", v1.CapacityTypeSpot, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), TerminationModeEventual)
	before := testutil.ToFloat64(series)
	pods := PodsDisruptionInitiatedTotal.WithLabelValues("underutilized", "web", v1.CapacityTypeSpot, string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized), TerminationModeEventual)
	podsBefore := testutil.ToFloat64(pods)
	CountDisrupted(nc, "underutilized", v1.ConsolidationPolicyWhenEmptyOrUnderutilized, 7)
	if got := testutil.ToFloat64(series); got != before+1 {
		t.Fatalf("karpenter_nodeclaims_disrupted_total{reason=underutilized,nodepool=web,capacity_type=spot,consolidation_policy=WhenEmptyOrUnderutilized,termination_mode=eventual} = %v, want %v", got, before+1)
	}
	if got := testutil.ToFloat64(pods); got != podsBefore+7 {
		t.Fatalf("karpenter_pods_disruption_initiated_total (same labels) = %v, want %v", got, podsBefore+7)
	}
}
