package overlay

import (
	"context"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// decorator is a CloudProvider whose GetInstanceTypes applies the Store.
type decorator struct {
	cloudprovider.CloudProvider
	store *Store
}

// Decorate returns cp with the NodeOverlays of store applied to the instance
// types it returns; everything else is cp's.
func Decorate(cp cloudprovider.CloudProvider, store *Store) cloudprovider.CloudProvider {
	return &decorator{CloudProvider: cp, store: store}
}

// GetInstanceTypes returns the provider's instance types as overlaid, or an
// *cloudprovider.UnevaluatedNodePoolError while the overlays have not been
// evaluated against the NodePool.
func (d *decorator) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	its, err := d.CloudProvider.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, err
	}
	return d.store.ApplyAll(np.Name, its)
}
