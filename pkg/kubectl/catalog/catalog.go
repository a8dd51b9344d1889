// Package catalog prices nodes for kubectl-karpenter without asking any cloud:
// a node's $/h comes from its labels (instance type, zone, capacity type),
// looked up in the reference catalog of the provider that launched it, told
// apart by its providerID (cloudprovider.Offline.Launched). A node no provider
// claims is priced by the first provider whose catalog knows its labels. The
// package names no provider: it asks every one the registry
// (pkg/providers) lists.
package catalog

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers"
)

// Catalog prices nodes through a list of providers.
type Catalog struct {
	offline []cloudprovider.Offline
}

// New prices through the given providers, in their order.
func New(ps []cloudprovider.Provider) *Catalog {
	c := &Catalog{offline: make([]cloudprovider.Offline, len(ps))}
	for i, p := range ps {
		c.offline[i] = p.Offline()
	}
	return c
}

// registry is the catalog of every provider compiled in, built once.
var registry = sync.OnceValue(func() *Catalog { return New(providers.All()) })

// Default is the catalog of every provider compiled into the plugin.
func Default() *Catalog { return registry() }

// PriceOf is the node's $/h through the registry's providers, and whether it
// could be priced (a node Karpenter did not launch, or an unknown type,
// cannot).
func PriceOf(node *corev1.Node) (float64, bool) { return Default().PriceOf(node) }

// PriceOf is the node's $/h, and whether it could be priced: by the provider
// whose providerID the node carries, else by the first that can.
func (c *Catalog) PriceOf(node *corev1.Node) (float64, bool) {
	for _, o := range c.offline {
		if o.Launched(node) {
			return o.NodePrice(node)
		}
	}
	for _, o := range c.offline {
		if p, ok := o.NodePrice(node); ok {
			return p, true
		}
	}
	return 0, false
}
