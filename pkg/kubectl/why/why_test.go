package why_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/why"
)

const nodePool = "../plan/testdata/nodepool.yaml"

func expectContains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("output does not say %q:\n%s", w, text)
		}
	}
}

func TestWhyPodNoInstanceTypeIsBigEnough(t *testing.T) {
	s := plantest.Base(t, nodePool)
	if err := s.Add(plantest.PendingPod("huge", "5000")); err != nil {
		t.Fatal(err)
	}
	out, err := why.Pod(context.Background(), s, "default", "huge")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "would stay pending", "nodepool default", "closest is", "lacks cpu")
}

func TestWhyPodThatFitsNamesTheLaunch(t *testing.T) {
	s := plantest.Base(t, nodePool)
	if err := s.Add(plantest.PendingPod("web", "1")); err != nil {
		t.Fatal(err)
	}
	out, err := why.Pod(context.Background(), s, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "would launch a node of nodepool default", "-amd64-linux")
	if _, err := why.Pod(context.Background(), s, "default", "missing"); err == nil || !strings.Contains(err.Error(), "default/missing") {
		t.Errorf("missing pod: err = %v", err)
	}
}

func TestWhyNodeBlockedByDoNotDisrupt(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	pod := plantest.BoundPod("precious", "big", "500m")
	pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := s.Add(n, nc, pod); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "big")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "not a candidate, blocked", "DoNotDisrupt", "precious", "Instance type:", "c-16x-amd64-linux costs", "cheaper types fit")
}

func TestWhyNodeCandidateAndInstanceTypeChoice(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	if err := s.Add(n, nc, plantest.BoundPod("small", "big", "500m")); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "big")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "candidate: the disruption passes would replace it", "Underutilized", "next cheapest that fits")
	if _, err := why.Node(context.Background(), s, "nope"); err == nil {
		t.Error("unknown node: no error")
	}
}

// A NodeClaim sized for 12 cpu: its c-16x is the cheapest type that fits,
// the cheaper ones are too small, and the next cheapest is named.
func TestWhyNodeInstanceTypeOverTheNextCheapest(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "sized", "c-16x-amd64-linux")
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")}
	pod := plantest.BoundPod("app", "sized", "12")
	pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := s.Add(n, nc, pod); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "sized")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "it is the cheapest of nodepool default's types that fit", "cheaper c-8x-amd64-linux", "too small", "lacks cpu", "next cheapest that fits: ")
}

// A node keeping a CapacityBuffer's room (a buffer the controller resolved)
// says so, naming the buffer.
func TestWhyNodeNamesTheBufferItKeepsRoomFor(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "roomy", "c-4x-amd64-linux")
	chunk := plantest.PendingPod("chunk", "1")
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: "default"}, Template: corev1.PodTemplateSpec{Spec: chunk.Spec}}
	b := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default", UID: "uid-spare"},
		Spec:   autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](2)},
		Status: autoscalingv1beta1.CapacityBufferStatus{Conditions: []metav1.Condition{{Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: "Resolved"}}}}
	if err := s.Add(n, nc, pt, b); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "roomy")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "it keeps room for 2 chunk(s) of CapacityBuffer default/spare")
}

// A rebooting node is no method's candidate; why says it is rebooting.
func TestWhyNodeRebooting(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonIssued, "rebooting for KWOKRebootRequired=True")
	if err := s.Add(n, nc, plantest.BoundPod("small", "big", "500m")); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "big")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "not a candidate: it is being rebooted (Rebooting RebootIssued: rebooting for KWOKRebootRequired=True)")
}
