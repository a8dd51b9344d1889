package cloudprovider

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Offline is the read-only side of a provider: what a tool that plans and
// prices over a snapshot of the cluster (kubectl-karpenter) needs, without
// the provider's controllers running and without launching anything. The
// tool loops over the registry's providers and names none of them.
type Offline interface {
	// NodeClassGroup is the API group of the provider's NodeClass kinds; a
	// NodePool whose nodeClassRef names it is planned with this provider.
	NodeClassGroup() string
	// InstanceTypes returns a CloudProvider over reader (a snapshot's
	// read-only store, which holds the NodeClasses as the cluster's
	// controllers resolved them) of which only Name and GetInstanceTypes are
	// called. It reads its catalog as the controller would (environment,
	// files, or the provider's read-only APIs); an error names what is
	// missing.
	InstanceTypes(ctx context.Context, reader client.Client, clk clock.Clock) (CloudProvider, error)
	// Launched reports whether the node's spec.providerID is one this
	// provider gives its instances.
	Launched(node *corev1.Node) bool
	// NodePrice is the node's $/h from its labels (instance type, zone,
	// capacity type) in the provider's reference catalog, and whether the
	// catalog could price it. It makes no network call.
	NodePrice(node *corev1.Node) (float64, bool)
}
