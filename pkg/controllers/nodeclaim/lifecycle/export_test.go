package lifecycle

import (
	"context"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// WriteStatus exposes writeStatus to the tests of stale reads, which the
// controller's reads through the test client cannot produce.
func (c *Controller) WriteStatus(ctx context.Context, stored, nc *v1.NodeClaim) error {
	return c.writeStatus(ctx, stored, nc)
}
