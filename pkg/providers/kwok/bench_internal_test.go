package kwok

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// BenchmarkCheapestOffering measures the offering choice Create makes for a
// NodeClaim as the provisioner writes them: a list of candidate instance
// types (here 60 of the 144) plus arch/os/capacity-type requirements.
func BenchmarkCheapestOffering(b *testing.B) {
	catalog, err := LoadInstanceTypes("")
	if err != nil {
		b.Fatal(err)
	}
	cp := New(context.Background(), nil, clock.RealClock{}, catalog)
	var names []string
	for _, it := range cp.instanceTypes {
		if it.Requirements.Has(corev1.LabelArchStable, "amd64") && len(names) < 60 {
			names = append(names, it.Name)
		}
	}
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
		scheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
	)
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("6Gi")}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := cp.cheapest(cp.instanceTypes, reqs, requests); err != nil {
			b.Fatal(err)
		}
	}
}
