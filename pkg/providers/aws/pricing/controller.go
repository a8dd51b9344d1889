package pricing

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Refresh intervals: prices are refetched every 12 hours, as upstream; a
// failed refresh is retried after RetryInterval.
const (
	RefreshInterval = 12 * time.Hour
	RetryInterval   = 5 * time.Minute
)

// Controller refreshes a Provider's prices. It is a manager Runnable.
type Controller struct {
	provider *Provider
	clock    clock.Clock
}

// NewController returns the price refresher of p.
func NewController(p *Provider, clk clock.Clock) *Controller {
	return &Controller{provider: p, clock: clk}
}

// NeedLeaderElection: only the leader launches, so only it needs fresh prices.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start refreshes at once and then every RefreshInterval (RetryInterval after
// a failure) until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	for {
		wait := RefreshInterval
		if err := c.Reconcile(ctx); err != nil {
			log.FromContext(ctx).Error(err, "refreshing prices, keeping the known ones", "retryIn", RetryInterval)
			wait = RetryInterval
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
		}
	}
}

// Reconcile fetches on-demand and spot prices concurrently and reports both
// failures. One pass of Start, exported for tests.
func (c *Controller) Reconcile(ctx context.Context) error {
	var wg sync.WaitGroup
	var onDemandErr, spotErr error
	wg.Go(func() { onDemandErr = c.provider.UpdateOnDemandPricing(ctx) })
	wg.Go(func() { spotErr = c.provider.UpdateSpotPricing(ctx) })
	wg.Wait()
	return errors.Join(onDemandErr, spotErr)
}
