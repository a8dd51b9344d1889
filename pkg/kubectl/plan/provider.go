package plan

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/providers"
)

// CloudProvider picks the provider the snapshot's NodePools use and returns
// it in planning form (cloudprovider.Offline.InstanceTypes over the
// snapshot's read-only store). ps are the providers to choose from, the
// default first (nil: every provider compiled in, pkg/providers.All). A
// provider other than the default is chosen when a NodePool's nodeClassRef
// names its NodeClass group; otherwise the default plans.
func CloudProvider(ctx context.Context, snap *snapshot.Snapshot, ps []cloudprovider.Provider, clk clock.Clock) (cloudprovider.CloudProvider, error) {
	if ps == nil {
		ps = providers.All()
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no cloud provider to plan with")
	}
	nodePools := snapshot.All[*v1.NodePool](snap)
	for _, p := range ps[1:] {
		group := p.Offline().NodeClassGroup()
		for _, np := range nodePools {
			if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Group == group {
				cp, err := p.Offline().InstanceTypes(ctx, snap.Store, clk)
				if err != nil {
					return nil, fmt.Errorf("nodepool %s uses %s %s, so %s instance types are needed: %w", np.Name, ref.Kind, ref.Name, p.Name(), err)
				}
				return cp, nil
			}
		}
	}
	return ps[0].Offline().InstanceTypes(ctx, snap.Store, clk)
}
