package kwok_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

// KWOK's repair policies are upstream's: Ready False or Unknown for 10
// minutes, replaced without a drain; KWOKUnhealthy for 30 seconds, with a
// 45-second drain bound; KWOKRebootRequired for 30 seconds, rebooted after a
// drain of at most a minute. The set passes start-up validation.
func TestRepairPolicies(t *testing.T) {
	cp := &kwok.CloudProvider{}
	ps := cp.RepairPolicies()
	if err := disruption.ValidateRepairPolicies(ps); err != nil {
		t.Fatal(err)
	}
	type row struct {
		toleration, drain time.Duration
		action            cloudprovider.RepairAction
	}
	got := map[string]row{}
	for _, p := range ps {
		got[string(p.ConditionType)+"="+string(p.ConditionStatus)] = row{p.TolerationDuration, *p.TerminationGracePeriod, p.Action}
	}
	want := map[string]row{
		"Ready=False":             {10 * time.Minute, 0, cloudprovider.ReplaceNode},
		"Ready=Unknown":           {10 * time.Minute, 0, cloudprovider.ReplaceNode},
		"KWOKUnhealthy=True":      {30 * time.Second, 45 * time.Second, cloudprovider.ReplaceNode},
		"KWOKRebootRequired=True": {30 * time.Second, time.Minute, cloudprovider.RebootNode},
	}
	if len(got) != len(want) {
		t.Fatalf("policies %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	if kwok.UnhealthyCondition != corev1.NodeConditionType("KWOKUnhealthy") || kwok.RebootRequiredCondition != corev1.NodeConditionType("KWOKRebootRequired") {
		t.Errorf("conditions %s, %s", kwok.UnhealthyCondition, kwok.RebootRequiredCondition)
	}
}
