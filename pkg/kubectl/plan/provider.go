package plan

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
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
				return withOverlays(ctx, snap, cp), nil
			}
		}
	}
	cp, err := ps[0].Offline().InstanceTypes(ctx, snap.Store, clk)
	if err != nil {
		return nil, err
	}
	return withOverlays(ctx, snap, cp), nil
}

// withOverlays returns cp with the snapshot's NodeOverlays applied as the
// controller applies them, when the controller acts on them: when at least
// one overlay carries a ValidationSucceeded condition (the NodeOverlay
// controller, which runs only with the NodeOverlay feature gate, has
// evaluated them). The overlays are evaluated again here, against the
// snapshot's NodePools, so that an edit of the plan (a NodePool applied or
// deleted) is evaluated as the controller would; an overlay without the
// condition (e.g. one the plan applies) is evaluated too once the gate is
// seen to be on.
func withOverlays(ctx context.Context, snap *snapshot.Snapshot, cp cloudprovider.CloudProvider) cloudprovider.CloudProvider {
	overlays := snapshot.All[*v1alpha1.NodeOverlay](snap)
	gated := false
	for _, o := range overlays {
		if o.StatusConditions().Get(v1alpha1.ConditionTypeValidationSucceeded) != nil {
			gated = true
		}
	}
	if !gated {
		return cp
	}
	var pools []overlay.Pool
	for _, np := range snapshot.All[*v1.NodePool](snap) {
		its, err := cp.GetInstanceTypes(ctx, np)
		if err != nil {
			// Left unevaluated: the plan skips the NodePool, as the
			// controller's provisioner would.
			continue
		}
		pools = append(pools, overlay.Pool{NodePool: np, InstanceTypes: its})
	}
	items := make([]v1alpha1.NodeOverlay, len(overlays))
	for i, o := range overlays {
		items[i] = *o
	}
	store := overlay.NewStore()
	store.Update(overlay.Evaluate(items, pools, overlay.WellKnown(providerLabels(pools)...)))
	return overlay.Decorate(cp, store)
}

// providerLabels are the label keys the instance types define: an overlay
// may require one an instance type lacks (only well-known labels may be
// undefined, and the provider's are those its types use).
func providerLabels(pools []overlay.Pool) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pools {
		for _, it := range p.InstanceTypes {
			for _, k := range it.Requirements.Keys() {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}
