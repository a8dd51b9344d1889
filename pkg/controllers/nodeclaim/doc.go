// Package nodeclaim groups the controllers that own NodeClaims once the
// provisioner created them: lifecycle (launch, registration, initialization,
// liveness and the finalizer), garbagecollection (cloud instances against
// NodeClaims), podevents (status.lastPodEventTime), disruption (the
// Consolidatable and Drifted conditions) and expiration (expireAfter).
// Register wires them into a manager, with the Node termination controller
// (pkg/controllers/node/termination) that drains deleted Nodes; metrics holds
// the NodeClaim and Node metrics they record.
package nodeclaim

import (
	"context"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/disruption"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/expiration"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
)

// Register adds the lifecycle controller (with the Node providerID index),
// the Node termination controller (with its eviction queue), the pod events,
// disruption conditions and expiration controllers, and the garbage collector
// to mgr. Pass the cloud provider already wrapped by the metrics decorator
// (pkg/cloudprovider/metrics.Decorate) so that their calls are measured.
func Register(ctx context.Context, mgr manager.Manager, kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) error {
	if err := lifecycle.NewController(kubeClient, cloudProvider, clk, recorder).Register(ctx, mgr); err != nil {
		return err
	}
	if err := termination.NewController(kubeClient, cloudProvider, clk, recorder).Register(ctx, mgr); err != nil {
		return err
	}
	if err := podevents.NewController(kubeClient, clk).Register(ctx, mgr); err != nil {
		return err
	}
	if err := disruption.NewController(kubeClient, cloudProvider, clk).Register(mgr); err != nil {
		return err
	}
	if err := expiration.NewController(kubeClient, clk, recorder).Register(mgr); err != nil {
		return err
	}
	return garbagecollection.NewController(kubeClient, cloudProvider, clk, recorder).Register(mgr)
}
