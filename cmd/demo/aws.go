package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// The AWS path of the demo: the AWS emulator runs in this process, its instances join
// the local cluster as KWOK-run Nodes registered from their launch templates' user
// data, and Karpenter runs --cloud-provider=aws against it exactly as against EC2.

const (
	awsClusterName = "karpenter-demo"
	awsQueue       = "karpenter-demo" // INTERRUPTION_QUEUE, the EventBridge target
)

// startEmulator starts the emulator registering Nodes into the local cluster, with the
// interruption queue, and returns what a pod on EKS gets from outside the chart to
// reach it: the endpoint, the region and credentials (IRSA or Pod Identity's, on EKS).
func (d *demo) startEmulator(bootDelay time.Duration) ([]string, error) {
	e, err := awsemulator.Start(awsemulator.Options{ClusterName: awsClusterName, BootDelay: bootDelay, Kubeconfig: d.kubeconfig})
	if err != nil {
		return nil, err
	}
	d.emulator = e
	if _, err := e.CreateQueue(awsQueue); err != nil {
		return nil, err
	}
	e.SetEventQueue(awsQueue)
	// A developer's AWS profile or SSO settings must not leak into the process.
	return append(e.Env(), "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"), nil
}

// awsNodeClass is the EC2NodeClass upstream's getting-started guide writes: the latest
// AL2023 AMI, subnets and security groups by discovery tag, the node role.
func awsNodeClass() *v1.EC2NodeClass {
	discovery := map[string]string{"karpenter.sh/discovery": awsClusterName}
	return &v1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.EC2NodeClassSpec{
			AMISelectorTerms:           []v1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []v1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []v1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       "KarpenterNodeRole-" + awsClusterName,
		},
	}
}

// awsNodePool is kit.DefaultNodePool on the EC2NodeClass, capped by instance-cpu.
func awsNodePool(maxCPU int) *karpv1.NodePool {
	np := kit.DefaultNodePool("default", "default", maxCPU)
	reqs := np.Spec.Template.Spec.Requirements[:0]
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == v1.LabelInstanceCPU || r.Operator != corev1.NodeSelectorOpLt {
			reqs = append(reqs, r)
		}
	}
	reqs = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: v1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.Itoa(maxCPU + 1)}})
	np.Spec.Template.Spec.Requirements = reqs
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: v1.Group, Kind: "EC2NodeClass", Name: "default"}
	return np
}

func ec2NodeClassReady(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	var last *v1.EC2NodeClass
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nc := &v1.EC2NodeClass{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = nc
		return nc.StatusConditions().IsTrue(status.ConditionReady), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w; conditions %+v", err, last.Status.Conditions)
	}
	return err
}

// awsCost is the hourly price of the nodes by the emulator's prices (spot per zone,
// on-demand per type).
func (d *demo) awsCost(ctx context.Context) float64 {
	nodes := &corev1.NodeList{}
	if err := d.client.List(ctx, nodes); err != nil {
		return 0
	}
	total := 0.0
	for _, n := range nodes.Items {
		if p, ok := d.emulator.Price(n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], n.Labels[karpv1.CapacityTypeLabelKey]); ok {
			total += p
		}
	}
	return total
}
