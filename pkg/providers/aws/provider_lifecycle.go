package aws

import (
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/instance/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclaim/tagging"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
)

// lifecycleControllers are what keeps launched instances in line with the
// cluster: the EC2NodeClass hash annotations (static drift), tags written
// after registration, and the termination of instances no NodeClaim tracks.
func lifecycleControllers(deps cloudprovider.Deps, clusterName string, instances *instance.Provider) []cloudprovider.Controller {
	hash := nodeclass.NewHashController(deps.KubeClient)
	tags := tagging.NewController(deps.KubeClient, instances, clusterName)
	gc := garbagecollection.NewController(deps.KubeClient, instances, deps.Clock)
	return []cloudprovider.Controller{
		cloudprovider.Registerer(hash.Register),
		cloudprovider.Registerer(tags.Register),
		cloudprovider.Registerer(gc.Register),
	}
}
