package why_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/why"
)

// A pod whose containers ask for little but whose pod-level requests no instance type has is
// explained by the pod-level cpu it lacks.
func TestWhyPodLevelRequestsNoInstanceTypeIsBigEnough(t *testing.T) {
	s := plantest.Base(t, nodePool)
	pod := plantest.PendingPod("huge", "100m")
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5000")}}
	if err := s.Add(pod); err != nil {
		t.Fatal(err)
	}
	out, err := why.Pod(context.Background(), s, "default", "huge")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "would stay pending", "nodepool default", "closest is", "lacks cpu")
}
