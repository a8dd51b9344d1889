package nodepool

import (
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// Register adds every NodePool controller of this package to the manager.
func Register(mgr manager.Manager, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock) error {
	for _, r := range []interface{ Register(manager.Manager) error }{
		NewCounter(kubeClient, clk),
		NewReadiness(kubeClient, cloudProvider, clk),
		NewValidation(kubeClient, clk),
		NewHashController(kubeClient),
	} {
		if err := r.Register(mgr); err != nil {
			return err
		}
	}
	return nil
}
