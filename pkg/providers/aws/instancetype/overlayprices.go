package instancetype

import (
	"context"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
)

// OverlayPricesTTL is how long the NodeOverlays that price instance types
// without an EC2 price are reused before they are listed again (upstream's
// OverlayPricedTypesTTL).
const OverlayPricesTTL = 5 * time.Minute

// OverlayPrices gives a price to the instance types the pricing provider has
// none for (no on-demand or spot price in the region), as upstream's AWS
// provider does with the NodeOverlay feature gate on: the price of a
// NodeOverlay that passed validation (ValidationSucceeded True), sets
// spec.price and whose only requirement is node.kubernetes.io/instance-type
// In a list naming the type. Such a type's offerings are then available at
// that price; without such an overlay they stay unavailable. When several
// overlays name a type, the one whose name sorts last wins. Safe for
// concurrent use.
type OverlayPrices struct {
	kube  client.Reader
	clock clock.Clock

	mu sync.Mutex
	// prices by instance type, replaced (never modified) on a refresh.
	prices  map[string]float64
	expires time.Time
	seq     uint64
}

// NewOverlayPrices returns OverlayPrices that list NodeOverlays with kube.
func NewOverlayPrices(kube client.Reader, clk clock.Clock) *OverlayPrices {
	return &OverlayPrices{kube: kube, clock: clk}
}

// current returns the overlay prices, listing the NodeOverlays again when
// the last list is older than OverlayPricesTTL, and a number that changes
// whenever the prices do. A failed list keeps the prices known (logged) and
// is retried at the next call. A nil OverlayPrices prices nothing.
func (o *OverlayPrices) current(ctx context.Context) (map[string]float64, uint64) {
	if o == nil {
		return nil, 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock.Now()
	if now.Before(o.expires) {
		return o.prices, o.seq
	}
	list := &v1alpha1.NodeOverlayList{}
	if err := o.kube.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeoverlays to price instance types EC2 has no price for")
		return o.prices, o.seq
	}
	prices := overlayPrices(list.Items)
	if !maps.Equal(prices, o.prices) {
		o.prices = prices
		o.seq++
	}
	o.expires = now.Add(OverlayPricesTTL)
	return o.prices, o.seq
}

// Reset forgets the overlays listed, so that the next use lists them again.
func (o *OverlayPrices) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expires = time.Time{}
}

// overlayPrices maps each instance type the qualifying overlays name to
// their price.
func overlayPrices(overlays []v1alpha1.NodeOverlay) map[string]float64 {
	sort.Slice(overlays, func(i, j int) bool { return overlays[i].Name < overlays[j].Name })
	out := map[string]float64{}
	for i := range overlays {
		ov := &overlays[i]
		if ov.Spec.Price == nil || !ov.StatusConditions().IsTrue(v1alpha1.ConditionTypeValidationSucceeded) {
			continue
		}
		reqs := ov.Spec.Requirements
		if len(reqs) != 1 || reqs[0].Key != corev1.LabelInstanceTypeStable || reqs[0].Operator != corev1.NodeSelectorOpIn {
			continue
		}
		price, err := strconv.ParseFloat(*ov.Spec.Price, 64)
		if err != nil {
			continue
		}
		for _, name := range reqs[0].Values {
			out[name] = price
		}
	}
	return out
}
