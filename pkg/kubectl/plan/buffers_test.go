package plan_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

func bufferSnapshot(t *testing.T, resolved bool) *snapshot.Snapshot {
	t.Helper()
	s := plantest.Base(t, "testdata/nodepool.yaml")
	chunk := plantest.PendingPod("chunk", "1")
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "spare"}}, Spec: chunk.Spec}}
	b := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default", UID: "uid-spare"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](2)}}
	if resolved {
		b.Status.Conditions = []metav1.Condition{{Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: "Resolved"}}
	}
	if err := s.Add(pt, b); err != nil {
		t.Fatal(err)
	}
	return s
}

// The plan keeps CapacityBuffers' room as the controller does: with a buffer
// the buffer controller resolved (ReadyForProvisioning, written only with the
// CapacityBuffer gate), its chunks launch capacity and the plan says where
// they are kept; a buffer no controller resolved changes nothing.
func TestPlanKeepsCapacityBufferRoom(t *testing.T) {
	p := compute(t, bufferSnapshot(t, true))
	if len(p.Launches) == 0 {
		t.Fatalf("no launch for the buffer's 2 chunks: %+v", p)
	}
	if len(p.Buffers) != 1 || p.Buffers[0].Buffer != "default/spare" || p.Buffers[0].Chunks != 2 || p.Buffers[0].Launched != 2 {
		t.Fatalf("buffers %+v, want default/spare with 2 chunks launched", p.Buffers)
	}
	if len(p.Pending) != 0 {
		t.Fatalf("chunks listed as pending pods: %+v", p.Pending)
	}
	// The launched room is not disrupted as empty by the plan's next steps.
	for _, d := range p.Disruptions {
		t.Errorf("disruption of the buffer's room: %+v", d)
	}
	var out bytes.Buffer
	if err := plan.Write(&out, p, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Capacity buffers (1):") || !strings.Contains(out.String(), "default/spare") {
		t.Fatalf("table does not show the buffer:\n%s", out.String())
	}
	if p := compute(t, bufferSnapshot(t, false)); len(p.Launches) != 0 || len(p.Buffers) != 0 {
		t.Fatalf("a buffer no controller resolved launched %+v (buffers %+v)", p.Launches, p.Buffers)
	}
}

// A buffer's chunk kept on an existing empty node holds that node: the plan
// does not delete it as empty, as the controller would not.
func TestPlanDoesNotDeleteANodeKeepingBufferRoom(t *testing.T) {
	s := bufferSnapshot(t, true)
	n, nc := plantest.Node(t, "roomy", "c-4x-amd64-linux")
	if err := s.Add(n, nc); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Launches) != 0 {
		t.Fatalf("launched %+v though the chunks fit on roomy", p.Launches)
	}
	if len(p.Buffers) != 1 || p.Buffers[0].OnExistingCapacity != 2 {
		t.Fatalf("buffers %+v, want both chunks on existing capacity", p.Buffers)
	}
	for _, d := range p.Disruptions {
		for _, name := range d.Nodes {
			if name == "roomy" {
				t.Fatalf("the plan disrupts roomy, which keeps the buffer's room: %+v", d)
			}
		}
	}
	// Without the buffer the same node is empty and goes.
	s2 := plantest.Base(t, "testdata/nodepool.yaml")
	n2, nc2 := plantest.Node(t, "roomy", "c-4x-amd64-linux")
	if err := s2.Add(n2, nc2); err != nil {
		t.Fatal(err)
	}
	if p := compute(t, s2); len(p.Disruptions) == 0 {
		t.Fatalf("without the buffer roomy is not deleted as empty: %+v", p)
	}
}

// The plan prints a lower bound under the fleet's $/h: positive, and not
// above what the plan's fleet costs.
func TestPlanPrintsTheLowerBound(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if err := s.Add(plantest.PendingPod(name, "1500m")); err != nil {
			t.Fatal(err)
		}
	}
	p := compute(t, s)
	if p.LowerBoundPerHour <= 0 || p.LowerBoundPerHour > p.CostPerHourAfter+1e-9 {
		t.Fatalf("lower bound %v, cost after %v: want 0 < bound <= cost", p.LowerBoundPerHour, p.CostPerHourAfter)
	}
	var out bytes.Buffer
	if err := plan.Write(&out, p, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Lower bound: no fleet running these pods from these NodePools costs less than $") {
		t.Fatalf("table without the bound:\n%s", out.String())
	}
}
