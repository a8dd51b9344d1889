package aws

import (
	"encoding/base64"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
)

// newLaunch builds the launch path: launch templates (a manager Runnable
// that hydrates and sweeps them) and the instance provider, sharing the
// EC2 client, subnets and unavailable offerings of the rest of the bundle.
// Without CLUSTER_CA_BUNDLE, nodes trust the CA of the controller's own
// kubeconfig; an empty endpoint, CA or service CIDR is read from EKS.
// kubeDNSIP is the nodes' cluster DNS address ("": derived from the service
// CIDR at launch). instOpts carries the instance provider's options beyond
// the cluster name (the zonal shifts).
func newLaunch(cfg aws.Config, deps cloudprovider.Deps, opts *settings.Options, providers nodeclass.Providers,
	unavailable *instancetype.UnavailableOfferings, kubeDNSIP string, instOpts instance.Options, instanceTypes *instancetype.Provider) (*launchtemplate.Provider, *instance.Provider) {
	ca := opts.ClusterCABundle
	if ca == "" && deps.Manager != nil {
		if rc := deps.Manager.GetConfig(); rc != nil && len(rc.CAData) > 0 {
			ca = base64.StdEncoding.EncodeToString(rc.CAData)
		}
	}
	// Kubelet expressions see the ENI limits scheduling saw.
	resolver := amifamily.NewResolver(amifamily.WithNodeClassCEL(opts.FeatureGates.Values[settings.FeatureNodeClassCEL], instanceTypes.ENILimits))
	lts := launchtemplate.NewProvider(providers.EC2, resolver, deps.Clock, launchtemplate.Options{
		ClusterName:     opts.ClusterName,
		ClusterEndpoint: opts.ClusterEndpoint,
		ClusterCABundle: ca,
		KubeDNSIP:       kubeDNSIP,
		EKS:             eks.NewFromConfig(cfg),
	})
	instOpts.ClusterName = opts.ClusterName
	instOpts.Reservations = providers.CapacityReservations.Availability()
	instances := instance.NewProvider(providers.EC2, lts, providers.Subnets, unavailable, deps.Clock, instOpts)
	instances.SetPlacementGroups(providers.PlacementGroups)
	return lts, instances
}
