package scheduling

import (
	"fmt"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// TestShapeIndexKeepsPlacements solves a cluster where few nodes admit most pods (a tainted,
// labelled pool among many plain nodes, all with room) with the room index's shape bits enabled
// from the first refusal and never, and checks that the placements are the same: the bits only
// skip nodes that would refuse the pod.
func TestShapeIndexKeepsPlacements(t *testing.T) {
	var nodes []*ExistingNode
	for i := 0; i < 600; i++ {
		name := fmt.Sprintf("n-%04d", i)
		n := &ExistingNode{
			Name: name, Initialized: true,
			Labels: map[string]string{LabelHostname: name, LabelZone: []string{"a", "b", "c"}[i%3], "pool": "general"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("10")},
		}
		switch {
		case i%50 == 7:
			n.Labels["pool"] = "gpu"
			n.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		case i%50 == 8:
			n.Labels["pool"] = "gpu" // untainted
		case i%70 == 9:
			n.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
		}
		nodes = append(nodes, n)
	}
	var pods []*corev1.Pod
	for i := 0; i < 400; i++ {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID = fmt.Sprintf("p-%d", i), "default", types.UID(fmt.Sprint("uid-", i))
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 300+(i%7)*200)), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
		switch i % 4 {
		case 0:
			p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		case 1:
			p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		case 2:
			p.Spec.NodeSelector = map[string]string{"pool": "gpu", LabelZone: "b"}
		}
		pods = append(pods, p)
	}
	render := func() string {
		s := newSolver(&Input{Pods: pods, ExistingNodes: nodes})
		s.run()
		var b strings.Builder
		for _, e := range s.results().ExistingNodes {
			b.WriteString(e.Node.Name + ":")
			for _, p := range e.Pods {
				b.WriteString(" " + p.Name)
			}
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d errors, shapes indexed %v", len(s.errors), s.room != nil && s.room.shapes != nil)
		return b.String()
	}
	defer func(f func(int) int) { shapeIndexAfter = f }(shapeIndexAfter)
	shapeIndexAfter = func(int) int { return math.MaxInt }
	without := render()
	shapeIndexAfter = func(int) int { return 0 }
	with := render()
	if !strings.HasSuffix(with, "shapes indexed true") || !strings.HasSuffix(without, "shapes indexed false") {
		t.Fatalf("shape bits not toggled: %q / %q", with[max(0, len(with)-40):], without[max(0, len(without)-40):])
	}
	if strings.TrimSuffix(with, "true") != strings.TrimSuffix(without, "false") {
		t.Errorf("placements differ with the shape bits:\n%s\nwithout:\n%s", with, without)
	}
}
