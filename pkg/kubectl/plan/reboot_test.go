package plan_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

// With NodeRepair, a node whose repair policy asks for a reboot (KWOK's
// KWOKRebootRequired) is planned rebooted: one step, nothing removed or
// added, and the node (empty as it is) is not taken again by another step.
func TestPlanRebootsANodeInPlace(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	n, nc := plantest.Node(t, "wedged", "c-2x-amd64-linux")
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: kwok.RebootRequiredCondition, Status: corev1.ConditionTrue,
		Reason: "Wedged", LastTransitionTime: metav1.NewTime(plantest.Now.Add(-time.Minute))})
	if err := s.Add(n, nc); err != nil {
		t.Fatal(err)
	}
	p, err := plan.PlanSnapshot(context.Background(), s, nil, nil, nil, nil, plan.Options{Now: plantest.Now, NodeRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Disruptions) != 1 {
		t.Fatalf("disruptions = %+v, want the reboot only", p.Disruptions)
	}
	d := p.Disruptions[0]
	if d.Action != "reboot" || d.Reason != "Unhealthy" || len(d.Nodes) != 1 || d.Nodes[0] != "wedged" || d.PricePerHourRemoved != 0 || len(d.Replacements) != 0 {
		t.Fatalf("disruption = %+v, want a reboot of wedged", d)
	}
	if p.CostPerHourAfter != p.CostPerHourBefore {
		t.Errorf("cost %v -> %v: a reboot keeps the node", p.CostPerHourBefore, p.CostPerHourAfter)
	}
}
