package plan_test

import (
	"bytes"
	"strings"
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

// staticNode is a node of the static NodePool.
func staticNode(t *testing.T, s *snapshot.Snapshot, name string) {
	t.Helper()
	n, nc := plantest.Node(t, name, "c-4x-amd64-linux")
	n.Labels[v1.NodePoolLabelKey], nc.Labels[v1.NodePoolLabelKey] = "static", "static"
	if err := s.Add(n, nc); err != nil {
		t.Fatal(err)
	}
}

// A static NodePool (spec.replicas) is held at its replicas in the plan as
// the static capacity controller holds it: the missing NodeClaims launch
// without any pod asking, and the plan's disruption steps leave them alone.
func TestPlanLaunchesAStaticNodePoolsReplicas(t *testing.T) {
	s := plantest.Base(t, "testdata/static.yaml")
	staticNode(t, s, "static-a")
	p := compute(t, s)
	if len(p.Static) != 1 || p.Static[0].NodePool != "static" || p.Static[0].Replicas != 3 || p.Static[0].Current != 1 || p.Static[0].Launch != 2 {
		t.Fatalf("static pools %+v, want static at 1 of 3 launching 2", p.Static)
	}
	n := 0
	for _, l := range p.Launches {
		if l.NodePool == "static" && l.For == "static nodepool static (replicas 3)" && l.InstanceType == "c-4x-amd64-linux" {
			n++
		}
	}
	if n != 2 || len(p.Launches) != 2 {
		t.Fatalf("launches %+v, want 2 c-4x-amd64-linux NodeClaims for the static pool", p.Launches)
	}
	for _, d := range p.Disruptions {
		t.Errorf("the plan disrupts a static pool's node: %+v", d)
	}
	var out bytes.Buffer
	if err := plan.Write(&out, p, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Static NodePools (1):") || !strings.Contains(out.String(), "static-plan-") {
		t.Fatalf("the table does not show the static pool:\n%s", out.String())
	}
}

// Above its replicas the plan removes the surplus as the controller picks it
// (nodes without workload first); with the StaticCapacity gate off (the
// NodePool's validation says so) the plan does nothing to the pool.
func TestPlanRemovesAStaticNodePoolsSurplusAndHonoursTheGate(t *testing.T) {
	s := plantest.Base(t, "testdata/static.yaml")
	for _, n := range []string{"static-a", "static-b", "static-c", "static-d"} {
		staticNode(t, s, n)
	}
	if err := s.Add(plantest.BoundPod("busy", "static-a", "1"), plantest.BoundPod("busy-2", "static-b", "1"), plantest.BoundPod("busy-3", "static-c", "1")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Static) != 1 || p.Static[0].Launch != 0 || len(p.Static[0].Remove) != 1 || p.Static[0].Remove[0] != "static-d" {
		t.Fatalf("static pools %+v, want static-d (no workload) removed", p.Static)
	}

	off := plantest.Base(t, "testdata/static.yaml")
	np := snapshot.All[*v1.NodePool](off)[0]
	np.StatusConditions().SetTrueWithReason(v1.ConditionTypeValidationSucceeded, nodepool.ReasonStaticCapacityDisabled, "the StaticCapacity feature gate is off")
	if p := compute(t, off); len(p.Static) != 0 || len(p.Launches) != 0 {
		t.Fatalf("with the gate off the plan acted on the static pool: static %+v, launches %+v", p.Static, p.Launches)
	}
}
