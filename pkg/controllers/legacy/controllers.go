package legacy

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Controllers are the legacy controllers: the Marker, the Terminator and
// the Replacer. cp should be the decorated provider.
// They are registered only when Enabled: a cluster without the v1alpha5
// CRDs (nothing to adopt) or a service account without access to them runs
// without, and the log says why.
func Controllers(kube client.Client, cp cloudprovider.CloudProvider, prov *provisioning.Provisioner, cluster *state.Cluster, clk clock.Clock, recorder record.EventRecorder) []cloudprovider.Controller {
	return []cloudprovider.Controller{cloudprovider.ControllerFunc(func(ctx context.Context, mgr manager.Manager) error {
		ok, why, err := Enabled(ctx, mgr.GetRESTMapper(), kube)
		if err != nil {
			return fmt.Errorf("legacy controllers: %w", err)
		}
		if !ok {
			mgr.GetLogger().Info("legacy (v1alpha5 Machine) controllers not started", "reason", why)
			return nil
		}
		if err := NewMarker(kube, clk).Register(mgr); err != nil {
			return err
		}
		if err := NewTerminator(kube, cp, clk, recorder).Register(mgr); err != nil {
			return err
		}
		return mgr.Add(NewReplacer(kube, prov, cluster, clk, recorder))
	})}
}
