// Package catalog prices nodes for kubectl-karpenter without asking any cloud:
// a node's $/h comes from its instance-type, zone and capacity-type labels,
// looked up in the catalog of the provider that launched it (told apart by
// the providerID scheme). KWOK nodes use KWOK's embedded catalog (or the
// file INSTANCE_TYPES_FILE_PATH names, as the controller does); AWS nodes use
// the provider's reference on-demand prices (the table the AWS emulator and
// the controller start from), for spot as well until live prices are known.
package catalog

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/pricing"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

type offeringKey struct{ instanceType, zone, capacityType string }

var (
	kwokOnce   sync.Once
	kwokPrices map[offeringKey]float64
	awsOnce    sync.Once
	awsPrices  *pricing.Provider
)

func loadKWOK() {
	kwokPrices = map[offeringKey]float64{}
	its, err := kwok.LoadInstanceTypesFromEnv()
	if err != nil {
		return
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			kwokPrices[offeringKey{it.Name, o.Zone(), o.CapacityType()}] = o.Price
		}
	}
}

// KWOKPrice is the price of one offering of KWOK's catalog.
func KWOKPrice(instanceType, zone, capacityType string) (float64, bool) {
	kwokOnce.Do(loadKWOK)
	p, ok := kwokPrices[offeringKey{instanceType, zone, capacityType}]
	return p, ok
}

// AWSPrice is the reference price of an EC2 instance type (us-east-1 Linux
// on-demand; spot is priced at on-demand, an upper bound).
func AWSPrice(instanceType, zone, capacityType string) (float64, bool) {
	awsOnce.Do(func() { awsPrices = pricing.NewProvider(nil, nil, "us-east-1", true, clock.RealClock{}) })
	if capacityType == v1.CapacityTypeSpot {
		return awsPrices.SpotPrice(instanceType, zone)
	}
	return awsPrices.OnDemandPrice(instanceType)
}

// PriceOf is the node's $/h, and whether it could be priced (a node Karpenter
// did not launch, or an unknown type, cannot).
func PriceOf(node *corev1.Node) (float64, bool) {
	l := node.Labels
	it, zone, ct := l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone], l[v1.CapacityTypeLabelKey]
	if it == "" {
		return 0, false
	}
	if ct == "" {
		ct = v1.CapacityTypeOnDemand
	}
	switch {
	case strings.HasPrefix(node.Spec.ProviderID, kwok.ProviderIDPrefix):
		return KWOKPrice(it, zone, ct)
	case strings.HasPrefix(node.Spec.ProviderID, "aws://"):
		return AWSPrice(it, zone, ct)
	}
	if p, ok := KWOKPrice(it, zone, ct); ok {
		return p, true
	}
	return AWSPrice(it, zone, ct)
}
