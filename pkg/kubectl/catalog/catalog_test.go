package catalog_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/catalog"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func node(providerID, instanceType, zone, capacityType string) *corev1.Node {
	return fixtures.Node("", fixtures.WithProviderID(providerID), fixtures.WithLabels(map[string]string{
		corev1.LabelInstanceTypeStable: instanceType, corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: capacityType}))
}

func TestPriceOf(t *testing.T) {
	od, ok := catalog.PriceOf(node("kwok://a", "c-2x-amd64-linux", "test-zone-a", v1.CapacityTypeOnDemand))
	spot, ok2 := catalog.PriceOf(node("kwok://b", "c-2x-amd64-linux", "test-zone-a", v1.CapacityTypeSpot))
	if !ok || !ok2 || od <= 0 || spot <= 0 || spot >= od {
		t.Errorf("KWOK on-demand %v (%v), spot %v (%v)", od, ok, spot, ok2)
	}
	if p, ok := catalog.PriceOf(node("aws:///us-west-2a/i-1", "m5.large", "us-west-2a", v1.CapacityTypeOnDemand)); !ok || p != 0.096 {
		t.Errorf("AWS m5.large = %v (%v), want 0.096", p, ok)
	}
	for _, n := range []*corev1.Node{node("kwok://c", "nope", "test-zone-a", "spot"), node("", "", "", "")} {
		if p, ok := catalog.PriceOf(n); ok {
			t.Errorf("%v priced at %v", n.Labels, p)
		}
	}
}
