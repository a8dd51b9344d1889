package aws

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancestatus"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	awssqs "github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
)

// interruptionController is the interruption controller on the
// INTERRUPTION_QUEUE queue, or nothing when no queue is configured (as
// upstream, interruption handling is then off). Spot interruption warnings
// mark offerings in unavailable, the instance type provider's cache, so the
// replacement avoids the reclaimed pool.
func interruptionController(cfg aws.Config, deps cloudprovider.Deps, opts *settings.Options, unavailable *instancetype.UnavailableOfferings) cloudprovider.Controller {
	if opts.InterruptionQueue == "" {
		return cloudprovider.NoController
	}
	queue := awssqs.NewProvider(sqs.NewFromConfig(cfg), opts.InterruptionQueue)
	return interruption.NewController(deps.KubeClient, queue, unavailable, deps.Recorder, deps.Clock, interruption.Options{})
}

// instanceStatusController polls EC2's status checks and scheduled events
// (DescribeInstanceStatus) every minute and replaces the nodes of unhealthy
// instances. As upstream, it runs whether or not an interruption queue is
// configured.
func instanceStatusController(ec2api *ec2.Client, deps cloudprovider.Deps, unavailable *instancetype.UnavailableOfferings) cloudprovider.Controller {
	statuses := instancestatus.NewProvider(ec2api, deps.Clock)
	return interruption.NewInstanceStatusController(deps.KubeClient, statuses, unavailable, deps.Recorder, deps.Clock, interruption.InstanceStatusOptions{})
}
