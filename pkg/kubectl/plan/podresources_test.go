package plan_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
)

// A pod whose containers request 100m but whose pod-level requests ask for 8 cpu is planned a
// node of at least 8 cpu, and the launch's requests say 8.
func TestPodLevelRequestsSizeTheLaunch(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	pod := plantest.PendingPod("batch", "100m")
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	if err := s.Add(pod); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Launches) != 1 || len(p.Pending) != 0 {
		t.Fatalf("launches %+v, pending %+v", p.Launches, p.Pending)
	}
	l := p.Launches[0]
	if !strings.HasPrefix(l.Requests, "cpu: 8,") {
		t.Errorf("launch requests %q do not count the pod-level 8 cpu", l.Requests)
	}
	var family string
	var cpus int
	if _, err := fmt.Sscanf(l.InstanceType, "%1s-%dx", &family, &cpus); err != nil || cpus < 8 {
		t.Errorf("instance type %s does not have the pod's 8 cpu", l.InstanceType)
	}
	t.Logf("launch %s for %s", l.InstanceType, l.Requests)
}
