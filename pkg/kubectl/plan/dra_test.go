package plan_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// A pending pod with a resource claim is planned nothing and listed pending
// with the refusal, naming IGNORE_DRA_REQUESTS; the pod beside it is launched
// for.
func TestPodWithResourceClaimIsPlannedNothing(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	dra := plantest.PendingPod("trainer", "1")
	tmpl := "gpu-template"
	dra.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	dra.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	if err := s.Add(dra, plantest.PendingPod("web", "1")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Launches) != 1 || len(p.Launches[0].Pods) != 1 || p.Launches[0].Pods[0] != "default/web" {
		t.Fatalf("launches %+v, want one for default/web", p.Launches)
	}
	if len(p.Pending) != 1 || p.Pending[0].Pod != "default/trainer" || len(p.Pending[0].Reasons) != 1 ||
		p.Pending[0].Reasons[0] != scheduling.DRAErrorMessage {
		t.Fatalf("pending %+v, want default/trainer refused for its resource claims", p.Pending)
	}
}
