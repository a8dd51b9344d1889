// Package fake builds synthetic scheduling inputs: instance types shaped like upstream
// Karpenter's fake cloud provider (used by its scheduling benchmark) and pod constructors for
// tests and benchmarks.
package fake

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Zones of the fake offerings.
var Zones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// InstanceTypes returns n types "fake-it-<i>" with i+1 vCPU, 2(i+1)Gi memory and 10(i+1) pods,
// each offered as spot in test-zone-1/2 and on-demand in test-zone-1/2/3 at
// 0.1×vCPU + 0.1×GiB per hour, with 100m cpu / 10Mi memory kube-reserved.
func InstanceTypes(n int) []*scheduling.InstanceType {
	out := make([]*scheduling.InstanceType, 0, n)
	for i := 0; i < n; i++ {
		cpu := int64(i + 1)
		mem := int64(2 * (i + 1))
		price := 0.1*float64(cpu) + 0.1*float64(mem)
		out = append(out, InstanceType(fmt.Sprintf("fake-it-%d", i), cpu, mem, 10*(i+1), price))
	}
	return out
}

// InstanceType builds one amd64/linux type with the default five offerings at the given price.
func InstanceType(name string, cpu, memGi int64, pods int, price float64) *scheduling.InstanceType {
	var offerings []scheduling.Offering
	for _, z := range Zones[:2] {
		offerings = append(offerings, scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeSpot, Price: price, Available: true})
	}
	for _, z := range Zones {
		offerings = append(offerings, scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return &scheduling.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"),
			scheduling.NewRequirement(scheduling.LabelOS, corev1.NodeSelectorOpIn, "linux"),
			scheduling.NewRequirement("karpenter.fake/cpu", corev1.NodeSelectorOpIn, fmt.Sprint(cpu)),
			scheduling.NewRequirement("karpenter.fake/family", corev1.NodeSelectorOpIn, family(cpu)),
		),
		Offerings: offerings,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		},
		Overhead: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("10Mi"),
		},
	}
}

func family(cpu int64) string {
	switch {
	case cpu <= 4:
		return "small"
	case cpu <= 32:
		return "medium"
	}
	return "large"
}

// Pod returns a pod with one container requesting cpu and memory (e.g. "500m", "1Gi").
func Pod(ns, name string, cpu, mem string, lbls map[string]string) *corev1.Pod {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: lbls},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "c",
			Resources: corev1.ResourceRequirements{Requests: req},
		}}},
	}
}
