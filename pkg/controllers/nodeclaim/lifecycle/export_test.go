package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// WriteStatus exposes writeStatus to the tests of stale reads, which the
// controller's reads through the test client cannot produce.
func (c *Controller) WriteStatus(ctx context.Context, stored, nc *v1.NodeClaim) error {
	return c.writeStatus(ctx, stored, nc)
}

// Remembers reports whether lifecycle still holds anything for the NodeClaim
// with uid: its launch cache entry, its registration count, its last applied
// status fields, or a name mapping to it.
func (c *Controller) Remembers(uid types.UID) bool {
	_, launched := c.Launch.cache.get(uid)
	_, registered := c.registered.Load(uid)
	_, applied := c.applied.Load(uid)
	named := false
	c.uids.Range(func(_, v any) bool {
		named = named || v.(types.UID) == uid
		return !named
	})
	return launched || registered || applied || named
}
