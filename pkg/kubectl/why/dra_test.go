package why_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/why"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// claimDevice makes the pod claim a device through Dynamic Resource Allocation.
func claimDevice(p *corev1.Pod) *corev1.Pod {
	tmpl := "gpu-template"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return p
}

// A pending pod with a resource claim is explained by the refusal and the
// setting that decides it, not by instance types it would fit.
func TestWhyPodWithResourceClaim(t *testing.T) {
	s := plantest.Base(t, nodePool)
	if err := s.Add(claimDevice(plantest.PendingPod("trainer", "1"))); err != nil {
		t.Fatal(err)
	}
	out, err := why.Pod(context.Background(), s, "default", "trainer")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "pod default/trainer would stay pending", "Dynamic Resource Allocation", "IGNORE_DRA_REQUESTS is true",
		scheduling.DRAErrorMessage)
	for _, wrong := range []string{"would launch", "closest is"} {
		if strings.Contains(out, wrong) {
			t.Errorf("output says %q:\n%s", wrong, out)
		}
	}
}

// A node whose pod claims a device is not consolidated, and why node says so.
func TestWhyNodeWithPodWithResourceClaim(t *testing.T) {
	s := plantest.Base(t, nodePool)
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	if err := s.Add(n, nc, claimDevice(plantest.BoundPod("trainer", "big", "500m"))); err != nil {
		t.Fatal(err)
	}
	out, err := why.Node(context.Background(), s, "big")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	expectContains(t, out, "not a candidate", "default/trainer", scheduling.DRAErrorMessage)
	if strings.Contains(out, "candidate: the disruption passes would") {
		t.Errorf("the node is planned for disruption:\n%s", out)
	}
}
