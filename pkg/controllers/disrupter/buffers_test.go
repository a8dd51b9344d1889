package disrupter_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// virtualPods are n chunks of a buffer, cpu each, labelled app=spare.
func virtualPods(n int32, cpu string) []*corev1.Pod {
	b := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default", UID: "uid-spare"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "spare"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	return capacitybuffer.VirtualPods(b, tmpl, n)
}

// A node keeping a CapacityBuffer's room holds no pod, yet it is not empty:
// emptiness leaves it, and consolidation finds no cheaper home for the room.
func TestNodeKeepingBufferRoomIsNotEmpty(t *testing.T) {
	f := newFixture(t)
	node, nc := f.node(t, "spare", "c-4x-amd64-linux")
	f.sync(t)
	f.cluster.SetBufferPods(map[string][]*corev1.Pod{node.Name: virtualPods(1, "3")})
	if r := f.pass(t); r.acted || r.err != nil {
		t.Fatalf("want nothing done to a node keeping buffer room, got %+v", r)
	}
	if n := ExpectExists(f.ctx, t, testEnv.Client, node.DeepCopy()); hasTaint(n, v1.DisruptedTaintKey) {
		t.Fatal("the node keeping buffer room was tainted for disruption")
	}
	ExpectExists(f.ctx, t, testEnv.Client, nc.DeepCopy())
}

// Consolidation may move a buffer's room to a node with space for it; a
// PodDisruptionBudget selecting the buffer's labels does not block that, as
// nothing is evicted.
func TestBufferRoomMovesWithoutPDB(t *testing.T) {
	f := newFixture(t)
	spare, spareClaim := f.node(t, "spare", "c-4x-amd64-linux")
	busy, _ := f.node(t, "busy", "c-4x-amd64-linux", notConsolidatable)
	f.pod(t, "db", busy.Name, "1", nil)
	f.pdb(t, "spare", 0, map[string]string{"app": "spare"})
	f.sync(t)
	f.cluster.SetBufferPods(map[string][]*corev1.Pod{spare.Name: virtualPods(1, "1")})
	r := f.pass(t)
	if !r.acted || r.err != nil {
		t.Fatalf("want the spare node consolidated onto the busy one, got %+v (events %q)", r, f.events())
	}
	got := ExpectExists(f.ctx, t, testEnv.Client, spareClaim.DeepCopy())
	if c := got.StatusConditions().Get(v1.ConditionTypeDisruptionReason); !c.IsTrue() || c.Reason != string(v1.DisruptionReasonUnderutilized) {
		t.Fatalf("DisruptionReason %+v, want Underutilized: the room moves, the node is not empty", c)
	}
}
