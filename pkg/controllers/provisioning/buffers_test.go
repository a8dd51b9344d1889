package provisioning_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	buffercontroller "github.com/karpenter-go/karpenter/pkg/controllers/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// bufferFixture is a fixture whose provisioner places the virtual pods of the
// buffers a buffer controller resolves.
type bufferFixture struct {
	*fixture
	store *capacitybuffer.Store
	ctrl  *buffercontroller.Controller
}

func newBufferFixture(t *testing.T) *bufferFixture {
	f := &bufferFixture{fixture: newFixture(t), store: capacitybuffer.NewStore()}
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second, Buffers: f.store})
	f.ctrl = buffercontroller.NewController(testEnv.Client, f.store, func(types.UID) {})
	t.Cleanup(func() {
		ctx := context.Background()
		_ = testEnv.Client.DeleteAllOf(ctx, &autoscalingv1beta1.CapacityBuffer{}, client.InNamespace("default"))
		_ = testEnv.Client.DeleteAllOf(ctx, &corev1.PodTemplate{}, client.InNamespace("default"))
	})
	return f
}

// chunkTemplate is a PodTemplate of one cpu that tolerates the NodePool's taint.
func chunkTemplate(name, cpu string) *corev1.PodTemplate {
	p := pendingPod("x", cpu)
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: p.Spec}}
}

func bufferOf(name, template string, replicas int32) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: template}, Replicas: ptr.To(replicas)}}
}

func (f *bufferFixture) condition(t *testing.T, b *autoscalingv1beta1.CapacityBuffer, typ string) *metav1.Condition {
	t.Helper()
	b = ExpectExists(f.ctx, t, testEnv.Client, b)
	return apimeta.FindStatusCondition(b.Status.Conditions, typ)
}

func (f *bufferFixture) bufferPods() int {
	n := 0
	for _, sn := range f.cluster.Nodes() {
		n += len(f.cluster.BufferPods(sn))
	}
	return n
}

// A CapacityBuffer launches capacity for its chunks without any pod pending;
// the next decision finds them on that capacity (Provisioning True,
// FitsExistingCapacity) and launches nothing more; virtual pods get no event;
// and once the buffer is gone its room is no longer kept.
func TestCapacityBufferKeepsRoomWithoutPods(t *testing.T) {
	f := newBufferFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), chunkTemplate("chunk", "1"), bufferOf("spare", "chunk", 2))
	b := bufferOf("spare", "chunk", 2)
	ExpectReconciled(f.ctx, t, f.ctrl, b)
	b = ExpectExists(f.ctx, t, testEnv.Client, b)
	if c := apimeta.FindStatusCondition(b.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning); c == nil || c.Status != metav1.ConditionTrue || c.Reason != capacitybuffer.ReasonResolved {
		t.Fatalf("ReadyForProvisioning %+v, want True Resolved", c)
	}
	if b.Status.Replicas == nil || *b.Status.Replicas != 2 || b.Status.PodTemplateRef == nil || b.Status.PodTemplateRef.Name != "chunk" || b.Status.PodTemplateGeneration == nil {
		t.Fatalf("status %+v, want 2 replicas of PodTemplate chunk with its generation", b.Status)
	}

	res := f.schedule(t)
	if len(res.NodeClaims) == 0 {
		t.Fatalf("no nodeclaim launched for the buffer's 2 chunks")
	}
	launched := len(res.NodeClaims)
	if c := f.condition(t, b, autoscalingv1beta1.ConditionProvisioning); c == nil || c.Status != metav1.ConditionFalse || c.Reason != capacitybuffer.ReasonRequiresNewCapacity {
		t.Fatalf("Provisioning after the launch %+v, want False RequiresNewCapacity", c)
	}
	if n := f.bufferPods(); n != 2 {
		t.Fatalf("cluster state keeps %d buffer pods on nodes, want 2 (on the nodeclaims just launched)", n)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "capacity-buffer") || strings.Contains(e, "Nominated") {
			t.Errorf("event about a virtual pod: %s", e)
		}
	}

	res = f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("second decision launched %d more nodeclaims (had %d)", len(res.NodeClaims), launched)
	}
	if c := f.condition(t, b, autoscalingv1beta1.ConditionProvisioning); c == nil || c.Status != metav1.ConditionTrue || c.Reason != capacitybuffer.ReasonFitsExistingCapacity {
		t.Fatalf("Provisioning on the second decision %+v, want True FitsExistingCapacity", c)
	}

	ExpectDeleted(f.ctx, t, testEnv.Client, b)
	ExpectReconciled(f.ctx, t, f.ctrl, b)
	if f.store.Len() != 0 {
		t.Fatalf("the deleted buffer is still stored")
	}
	f.schedule(t)
	if n := f.bufferPods(); n != 0 {
		t.Fatalf("%d buffer pods kept after the buffer was deleted", n)
	}
}

// A buffer naming a workload that does not exist yet is not ready
// (ScalableRefNotFound), and one naming an unsupported kind says which field;
// neither launches anything.
func TestCapacityBufferWithMissingReferenceIsNotReady(t *testing.T) {
	f := newBufferFixture(t)
	missing := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "default"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "nope"}, Replicas: ptr.To[int32](2)}}
	odd := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "odd", Namespace: "default"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "example.com", Kind: "Thing", Name: "t"}, Replicas: ptr.To[int32](2)}}
	noTemplate := bufferOf("no-template", "absent", 1)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), missing, odd, noTemplate)
	for _, tc := range []struct {
		b       *autoscalingv1beta1.CapacityBuffer
		reason  string
		message string
	}{
		{missing, capacitybuffer.ReasonScalableRefNotFound, "spec.scalableRef: Deployment default/nope not found"},
		{odd, capacitybuffer.ReasonResolutionFailed, `spec.scalableRef: apiGroup "example.com" is not supported`},
		{noTemplate, capacitybuffer.ReasonPodTemplateNotFound, "spec.podTemplateRef: PodTemplate default/absent not found"},
	} {
		ExpectReconciled(f.ctx, t, f.ctrl, tc.b)
		c := f.condition(t, tc.b, autoscalingv1beta1.ConditionReadyForProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.HasPrefix(c.Message, tc.message) {
			t.Errorf("%s: ReadyForProvisioning %+v, want False %s %q", tc.b.Name, c, tc.reason, tc.message)
		}
	}
	if f.store.Len() != 0 {
		t.Fatalf("%d unresolved buffers stored", f.store.Len())
	}
	res := f.schedule(t)
	if len(res.NodeClaims) != 0 {
		t.Fatalf("launched %d nodeclaims for unresolved buffers", len(res.NodeClaims))
	}
	if c := f.condition(t, missing, autoscalingv1beta1.ConditionProvisioning); c == nil || c.Status != metav1.ConditionFalse || c.Reason != capacitybuffer.ReasonNotReadyForProvisioning {
		t.Errorf("Provisioning %+v, want False NotReadyForProvisioning", c)
	}
}
