package awsemulator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// An instance an older Karpenter launched is running from the start, found by
// its tags, described with its subnet, security groups and image, and can be
// terminated; the Node it returns is the one its kubelet registered.
func TestSeedRunningInstance(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	in, node, err := c.e.SeedRunningInstance(awsemulator.PreexistingInstance{
		InstanceType: "m5.large", ImageID: "ami-0123456789abcdef0",
		Tags:   map[string]string{"karpenter.sh/provisioner-name": "default", "kubernetes.io/cluster/" + c.e.Options().ClusterName: "owned"},
		Labels: map[string]string{"karpenter.sh/provisioner-name": "default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/provisioner-name"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances by tag found %d reservations", len(out.Reservations))
	}
	got := out.Reservations[0].Instances[0]
	if aws.ToString(got.InstanceId) != in.ID || got.State.Name != ec2types.InstanceStateNameRunning ||
		aws.ToString(got.ImageId) != "ami-0123456789abcdef0" || aws.ToString(got.SubnetId) == "" || len(got.SecurityGroups) == 0 {
		t.Fatalf("described %s %s image %s subnet %s groups %d", aws.ToString(got.InstanceId), got.State.Name, aws.ToString(got.ImageId), aws.ToString(got.SubnetId), len(got.SecurityGroups))
	}
	if node.Spec.ProviderID != "aws:///"+in.Zone+"/"+in.ID || node.Name != in.PrivateDNSName ||
		node.Labels["karpenter.sh/provisioner-name"] != "default" || node.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Fatalf("node %s %s labels %v", node.Name, node.Spec.ProviderID, node.Labels)
	}
	if cpu := node.Status.Allocatable.Cpu(); cpu.MilliValue() <= 0 || cpu.MilliValue() >= 2000 {
		t.Fatalf("allocatable cpu %v, want a reserved share of 2 vCPUs", cpu)
	}
	if _, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{in.ID}}); err != nil {
		t.Fatal(err)
	}
	for _, cur := range c.e.Instances() {
		if cur.ID == in.ID && cur.State != "shutting-down" && cur.State != "terminated" {
			t.Fatalf("instance %s is %s after TerminateInstances", in.ID, cur.State)
		}
	}

	if _, _, err := c.e.SeedRunningInstance(awsemulator.PreexistingInstance{InstanceType: "m5.nope"}); err == nil || !strings.Contains(err.Error(), "m5.nope") {
		t.Fatalf("unknown instance type: err %v", err)
	}
	if _, _, err := c.e.SeedRunningInstance(awsemulator.PreexistingInstance{InstanceType: "m5.large", Zone: "mars-1a"}); err == nil || !strings.Contains(err.Error(), "mars-1a") {
		t.Fatalf("unknown zone: err %v", err)
	}
	if _, ok := c.e.Parameter("/aws/service/eks/optimized-ami/does-not-exist"); ok {
		t.Fatal("Parameter found a parameter that does not exist")
	}
}
