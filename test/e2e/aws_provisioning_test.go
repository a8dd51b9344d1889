package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// TestAWSProvisioningAMIFamilies: one NodePool per AMI family (AL2023, Bottlerocket,
// AL2 — Kubernetes 1.32, the last version AL2 is published for); each pool's pods run
// on nodes that joined from that family's user data, with the pool's labels and taints.
func TestAWSProvisioningAMIFamilies(t *testing.T) {
	e := startAWS(t, awsOptions{kubernetesVersion: "1.32"})
	families := []struct {
		name, alias string
		image       func(name string) bool
	}{
		{"al2023", "al2023@latest", func(n string) bool { return strings.HasPrefix(n, "amazon-eks-node-al2023-") }},
		{"bottlerocket", "bottlerocket@latest", func(n string) bool { return strings.HasPrefix(n, "bottlerocket-aws-k8s-1.32-") }},
		{"al2", "al2@latest", func(n string) bool {
			return !strings.Contains(n, "al2023") && strings.HasPrefix(n, "amazon-eks-") && strings.Contains(n, "node-1.32-")
		}},
	}
	for _, f := range families {
		np := awsNodePool(f.name, f.name, 8)
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"family": f.name}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "family", Value: f.name, Effect: corev1.TaintEffectNoSchedule}}
		e.apply(t, ec2NodeClass(f.name, f.alias), np)
	}
	for _, f := range families {
		e.waitNodeClassReady(t, f.name)
	}
	for _, f := range families {
		d := kit.Deployment("default", f.name, 3, "1", "1Gi", false)
		d.Spec.Template.Spec.NodeSelector = map[string]string{"family": f.name}
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "family", Value: f.name, Effect: corev1.TaintEffectNoSchedule}}
		e.apply(t, d)
	}
	e.waitRunning(t, 3*len(families), 5*time.Minute)
	e.expectNodesMatchNodeClaims(t)
	e.expectInstancesMatchNodeClaims(t)

	images := map[string]string{}
	for _, im := range e.emu.Images() {
		images[im.ID] = im.Name
	}
	for _, f := range families {
		for node := range e.nodesOf(t, f.name) {
			n := &corev1.Node{}
			if err := e.Client.Get(e.ctx, types.NamespacedName{Name: node}, n); err != nil {
				t.Fatal(err)
			}
			in := e.instanceOfNode(t, node)
			if !f.image(images[in.ImageID]) {
				t.Errorf("%s pod runs on %s booted from %s (%s), not a %s image", f.name, node, in.ImageID, images[in.ImageID], f.alias)
			}
			if n.Labels["family"] != f.name || n.Labels[v1.NodePoolLabelKey] != f.name || n.Labels[awsv1.LabelNodeClass] != f.name {
				t.Errorf("node %s labels %v: the user data did not register the pool's labels", node, n.Labels)
			}
			tainted := false
			for _, taint := range n.Spec.Taints {
				tainted = tainted || (taint.Key == "family" && taint.Value == f.name)
			}
			if !tainted {
				t.Errorf("node %s taints %v: the user data did not register the pool's taint", node, n.Spec.Taints)
			}
			if in.MetadataOptions["HttpTokens"] != "required" || in.MetadataOptions["HttpPutResponseHopLimit"] != "1" {
				t.Errorf("instance %s metadata options %v, want IMDSv2 required with hop limit 1", in.ID, in.MetadataOptions)
			}
		}
	}
	// Launch tags at once; Name and karpenter.sh/nodeclaim from the tagging controller
	// shortly after registration (through CreateTags, under the shipped policy).
	want := []string{"kubernetes.io/cluster/" + awsCluster, "eks:eks-cluster-name", v1.NodePoolLabelKey, awsv1.LabelNodeClass, "karpenter.sh/nodeclaim", "Name", "team"}
	missing := ""
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		missing = ""
		for _, in := range e.liveInstances() {
			for _, k := range want {
				if _, ok := in.Tags[k]; !ok {
					missing += fmt.Sprintf("instance %s lacks tag %s (%v); ", in.ID, k, in.Tags)
				}
			}
		}
		return missing == "", nil
	}); err != nil {
		t.Fatal(missing)
	}
}

// TestAWSInsufficientCapacityFallsBack: the cheapest instance types have no capacity in
// any zone; the launch falls back to another type in the same CreateFleet call and the
// pods run.
func TestAWSInsufficientCapacityFallsBack(t *testing.T) {
	e := startAWS(t, awsOptions{})
	np := awsNodePool("default", "default", 8)
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"t3.medium", "t3.large", "m5.large", "c5.large", "m5.xlarge"}})
	e.apply(t, ec2NodeClass("default", "al2023@latest"), np)
	e.waitNodeClassReady(t, "default")
	iced := []string{"t3.medium", "t3.large", "c5.large"}
	for _, it := range iced {
		for _, z := range e.emu.Options().Zones {
			e.emu.SetInsufficientCapacity("on-demand", it, z, true)
		}
	}
	e.apply(t, kit.Deployment("default", "app", 2, "500m", "1Gi", false))
	e.waitRunning(t, 2, 3*time.Minute)
	e.expectInstancesMatchNodeClaims(t)
	for _, in := range e.liveInstances() {
		for _, it := range iced {
			if in.InstanceType == it {
				t.Errorf("instance %s launched as %s, which has no capacity", in.ID, it)
			}
		}
	}
	ncs := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	if fleets := e.emu.Calls("ec2", "CreateFleet"); fleets > len(ncs.Items)+1 {
		// +1: the validation dry run. Falling back inside the fleet needs no retry.
		t.Errorf("%d CreateFleet calls for %d NodeClaims: the fallback was not within the call", fleets, len(ncs.Items))
	}
}

// TestAWSDeletingNodeClassWaitsForNodeClaims: an EC2NodeClass being deleted stays
// while NodeClaims use it; when they are gone, its launch templates and instance
// profile go with it.
func TestAWSDeletingNodeClassWaitsForNodeClaims(t *testing.T) {
	e := startAWS(t, awsOptions{})
	nc := ec2NodeClass("default", "al2023@latest")
	np := awsNodePool("default", "default", 8)
	e.apply(t, nc, np)
	e.waitNodeClassReady(t, "default")
	e.apply(t, kit.Deployment("default", "app", 2, "1", "1Gi", false))
	e.waitRunning(t, 2, 3*time.Minute)
	if len(e.emu.LaunchTemplates()) == 0 || len(e.emu.InstanceProfiles()) == 0 {
		t.Fatalf("no launch template (%d) or instance profile (%d) after launching", len(e.emu.LaunchTemplates()), len(e.emu.InstanceProfiles()))
	}

	if err := e.Client.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	// For several reconcile periods the class stays, terminating, and its nodes serve.
	err := poll(e.ctx, 15*time.Second, func() (bool, error) {
		cur := &awsv1.EC2NodeClass{}
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: "default"}, cur); err != nil {
			return false, fmt.Errorf("EC2NodeClass gone while NodeClaims use it: %v", err)
		}
		if cur.DeletionTimestamp == nil {
			return false, fmt.Errorf("EC2NodeClass not terminating")
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
	if c := e.counts(t); c.Running != 2 {
		t.Fatalf("%d pods running while the class is terminating, want 2", c.Running)
	}

	if err := e.Client.Delete(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if err := poll(e.ctx, 3*time.Minute, func() (bool, error) {
		cur := &awsv1.EC2NodeClass{}
		err := e.Client.Get(e.ctx, types.NamespacedName{Name: "default"}, cur)
		return err != nil, client404(err)
	}); err != nil {
		t.Fatalf("EC2NodeClass not deleted after its NodeClaims: %v", err)
	}
	if n := len(e.liveInstances()); n != 0 {
		t.Errorf("%d instances still running", n)
	}
	if lts := e.emu.LaunchTemplates(); len(lts) != 0 {
		t.Errorf("launch templates left: %d (first %s)", len(lts), lts[0].Name)
	}
	if ips := e.emu.InstanceProfiles(); len(ips) != 0 {
		t.Errorf("instance profiles left: %d (first %s)", len(ips), ips[0].Name)
	}
}
