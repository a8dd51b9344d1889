package kwok

import (
	"context"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// offline is the KWOK provider's read-only side for kubectl-karpenter.
type offline struct{}

var _ cloudprovider.Offline = offline{}

func (offline) NodeClassGroup() string { return kwokv1alpha1.Group }

// InstanceTypes is the simulated provider over the catalog; its kube client
// is only used by Create/Delete/Get/List, which a planner never calls.
func (offline) InstanceTypes(ctx context.Context, reader client.Client, clk clock.Clock) (cloudprovider.CloudProvider, error) {
	catalog, err := LoadInstanceTypesFromEnv()
	if err != nil {
		return nil, err
	}
	return New(ctx, reader, clk, catalog), nil
}

func (offline) Launched(node *corev1.Node) bool {
	return strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix)
}

type offeringKey struct{ instanceType, zone, capacityType string }

// catalogPrices is the price of every offering of the catalog, read once;
// empty when the catalog cannot be read.
var catalogPrices = sync.OnceValue(func() map[offeringKey]float64 {
	prices := map[offeringKey]float64{}
	its, err := LoadInstanceTypesFromEnv()
	if err != nil {
		return prices
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			prices[offeringKey{it.Name, o.Zone(), o.CapacityType()}] = o.Price
		}
	}
	return prices
})

// NodePrice looks the node's offering up in the catalog, else reads the price
// label KWOK puts on the nodes it launches.
func (offline) NodePrice(node *corev1.Node) (float64, bool) {
	l := node.Labels
	if it := l[corev1.LabelInstanceTypeStable]; it != "" {
		ct := l[v1.CapacityTypeLabelKey]
		if ct == "" {
			ct = v1.CapacityTypeOnDemand
		}
		if p, ok := catalogPrices()[offeringKey{it, l[corev1.LabelTopologyZone], ct}]; ok {
			return p, true
		}
	}
	if s, ok := l[InstancePriceLabelKey]; ok {
		if p, err := strconv.ParseFloat(s, 64); err == nil {
			return p, true
		}
	}
	return 0, false
}
