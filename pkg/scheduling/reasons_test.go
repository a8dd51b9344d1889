package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// A pod that selects a pool sees that pool's reason first, even when other
// pools come earlier by weight and name, and an unavailable pool it selects
// is named with its message.
func TestPodReasonsSelectedPoolFirst(t *testing.T) {
	tainted := func(np *scheduling.NodePool) {
		np.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	}
	in := &scheduling.Input{
		Pods: []*corev1.Pod{mkPod("p", "1", "1Gi", withSelector(scheduling.LabelNodePool, "wanted"))},
		NodePools: []*scheduling.NodePool{
			pool("a-first", tainted),
			pool("b-limited", func(np *scheduling.NodePool) {
				np.Remaining = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}
			}),
		},
		UnavailableNodePools: []*scheduling.UnavailableNodePool{
			{NodePool: scheduling.NodePool{Name: "other"}, Message: "nodepool other is not ready: x"},
			{NodePool: scheduling.NodePool{Name: "wanted"}, Message: "nodepool wanted is not ready: y"},
		},
	}
	res := scheduling.Solve(in)
	err := res.PodErrors[in.Pods[0]]
	if err == nil {
		t.Fatalf("pod placed, want an error")
	}
	want := "nodepool wanted is not ready: y; " +
		"incompatible with nodepool b-limited: …"
	got := err.Error()
	if len(got) < len("nodepool wanted is not ready: y; ") || got[:len("nodepool wanted is not ready: y; ")] != "nodepool wanted is not ready: y; " {
		t.Fatalf("reasons = %q, want the selected pool first (like %q)", got, want)
	}
}

// A pod compatible with a pool sees it before pools whose requirements rule it out.
func TestPodReasonsCompatibleBeforeIncompatible(t *testing.T) {
	arm := func(np *scheduling.NodePool) {
		np.Requirements = scheduling.NewRequirements(scheduling.NewRequirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "arm64"))
	}
	in := &scheduling.Input{
		Pods:      []*corev1.Pod{mkPod("p", "64", "1Gi", withSelector(scheduling.LabelArch, "amd64"))},
		NodePools: []*scheduling.NodePool{pool("a-arm", arm), pool("b-amd")},
	}
	err := scheduling.Solve(in).PodErrors[in.Pods[0]]
	if err == nil {
		t.Fatalf("pod placed, want an error")
	}
	pe, ok := err.(*scheduling.PodError)
	if !ok || len(pe.Reasons) != 2 {
		t.Fatalf("error %T %v, want a PodError with 2 reasons", err, err)
	}
	if want := "incompatible with nodepool b-amd: no instance type fits"; len(pe.Reasons[0]) < len(want) || pe.Reasons[0][:len(want)] != want {
		t.Errorf("first reason %q, want it to start with %q", pe.Reasons[0], want)
	}
	if want := "incompatible with nodepool a-arm:"; len(pe.Reasons[1]) < len(want) || pe.Reasons[1][:len(want)] != want {
		t.Errorf("second reason %q, want it to start with %q", pe.Reasons[1], want)
	}
}

// Reasons stop after MaxPodReasons pools and count the rest.
func TestPodReasonsBounded(t *testing.T) {
	in := &scheduling.Input{Pods: []*corev1.Pod{mkPod("p", "64", "1Gi")}}
	for i := range scheduling.MaxPodReasons + 3 {
		in.NodePools = append(in.NodePools, pool(fmt.Sprintf("p%02d", i)))
	}
	err := scheduling.Solve(in).PodErrors[in.Pods[0]]
	pe, ok := err.(*scheduling.PodError)
	if !ok {
		t.Fatalf("error %T %v, want a PodError", err, err)
	}
	if len(pe.Reasons) != scheduling.MaxPodReasons+1 {
		t.Fatalf("%d reasons %q, want %d", len(pe.Reasons), pe.Reasons, scheduling.MaxPodReasons+1)
	}
	if got, want := pe.Reasons[scheduling.MaxPodReasons], "and 3 more nodepool(s)"; got != want {
		t.Errorf("last reason %q, want %q", got, want)
	}
}
