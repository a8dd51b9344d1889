package e2e_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// upstreamClaim is one NodeClaim as an upstream release left it: its hash
// annotations (values as upstream's hashstructure writes them, decimal
// uint64) and their versions; "" leaves an annotation out.
type upstreamClaim struct {
	name, release           string
	poolHash, poolVersion   string
	classHash, classVersion string
}

// TestAdoptV1NodeClaims: a cluster an upstream v1.x (or, converted, v0.33 to
// v0.37) install leaves - NodePool and EC2NodeClass stamped with upstream's
// hashes and versions (nodepool-hash-version v3, ec2nodeclass-hash-version
// v4), NodeClaims of four releases, their instances running in the AWS
// emulator and their Nodes with pods - switches to this controller. Every
// NodeClaim is adopted as it is: re-stamped with this controller's hash
// version, none drifted, no instance launched or terminated, the pods stay.
func TestAdoptV1NodeClaims(t *testing.T) {
	t.Parallel()
	claims := []upstreamClaim{
		{name: "default-v114", release: "v1.14", poolHash: "6821555240594823858", poolVersion: "v3", classHash: "2879430530264624391", classVersion: "v5"},
		{name: "default-v11", release: "v1.1", poolHash: "6821555240594823858", poolVersion: "v3", classHash: "4155829470165214632", classVersion: "v4"},
		// v0.37 (v1beta1, converted in place by v1.0's webhook) and v0.32,
		// which wrote no hash versions at all.
		{name: "default-v037", release: "v0.37", poolHash: "1536593574735937218", poolVersion: "v2", classHash: "9350451347447463113", classVersion: "v2"},
		{name: "default-v032", release: "v0.32", poolHash: "1536593574735937218", classHash: "9350451347447463113"},
	}
	live := map[string]string{} // instance ID -> node
	e := startAWS(t, awsOptions{seed: func(t testing.TB, e *awsEnv) {
		class := ec2NodeClass("default", "al2023@latest")
		class.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "4155829470165214632", awsv1.AnnotationEC2NodeClassHashVersion: "v4"}
		np := awsNodePool("default", "default", 4)
		np.Annotations = map[string]string{v1.NodePoolHashAnnotationKey: "6821555240594823858", v1.NodePoolHashVersionAnnotationKey: "v3"}
		e.apply(t, class, np)
		image, ok := e.emu.Parameter("/aws/service/eks/optimized-ami/" + e.opts.kubernetesVersion + "/amazon-linux-2023/x86_64/standard/recommended/image_id")
		if !ok {
			t.Fatal("the emulator has no AL2023 recommended image")
		}
		for _, c := range claims {
			id, node := seedV1NodeClaim(t, e, np, image, c)
			live[id] = node
		}
		e.apply(t, kit.Deployment("default", "web", 4, "500m", "256Mi", false))
		e.waitRunningOnLegacy(t, 4)
	}})
	before, err := e.webNodes()
	if err != nil {
		t.Fatal(err)
	}
	e.waitNodeClassReady(t, "default")

	// Re-stamped: both hashes carry this controller's version.
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		list := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, list); err != nil {
			return false, err
		}
		for _, nc := range list.Items {
			if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
				return false, nil
			}
		}
		return len(list.Items) == len(claims), nil
	}); err != nil {
		t.Fatalf("NodeClaims not re-stamped within 1m: %v (karpenter log %s)", err, e.karpenter.LogPath)
	}
	// Then a while of nothing: drift is re-checked, the instance garbage
	// collector runs, the provisioner and disruption take turns.
	e.expectNoNewNodeClaims(t, len(claims), 20*time.Second)
	list := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, nc := range list.Items {
		if c := nc.StatusConditions().Get(v1.ConditionTypeDrifted); c != nil && c.IsTrue() {
			t.Errorf("NodeClaim %s drifted on adoption: %s %s", nc.Name, c.Reason, c.Message)
		}
		if nc.DeletionTimestamp != nil {
			t.Errorf("NodeClaim %s is being deleted", nc.Name)
		}
	}
	if n := e.emu.Calls("ec2", "TerminateInstances"); n != 0 {
		t.Errorf("%d TerminateInstances calls: adoption terminated instances", n)
	}
	// (CreateFleet is called, as a dry run, by the EC2NodeClass validation:
	// count instances instead.)
	for _, in := range e.emu.Instances() {
		if _, ok := live[in.ID]; !ok {
			t.Errorf("instance %s (%s) launched on adoption", in.ID, in.InstanceType)
		} else if in.State != "running" {
			t.Errorf("instance %s is %s", in.ID, in.State)
		}
	}
	after, err := e.webNodes()
	if err != nil {
		t.Fatal(err)
	}
	for pod, n := range before {
		if m, ok := after[pod]; !ok || m.Name != n.Name {
			t.Errorf("pod %s moved or went away (was on %s)", pod, n.Name)
		}
	}
}

// seedV1NodeClaim makes what an upstream v1 install leaves for one node: an
// instance tagged as v1 tags it, its NodeClaim (hash annotations of the
// release, finalizer, owner NodePool, launched / registered / initialized)
// and its Node (labels, finalizer, owner NodeClaim).
func seedV1NodeClaim(t testing.TB, e *awsEnv, np *v1.NodePool, image string, c upstreamClaim) (string, string) {
	t.Helper()
	labels := map[string]string{
		v1.NodePoolLabelKey: np.Name, awsv1.LabelNodeClass: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand,
		"karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m5",
		"karpenter.k8s.aws/instance-size": "large", "karpenter.k8s.aws/instance-cpu": "2",
	}
	in, node, err := e.emu.SeedRunningInstance(awsemulator.PreexistingInstance{
		InstanceType: "m5.large", ImageID: image,
		Tags: map[string]string{
			awsv1.TagClusterPrefix + awsCluster: "owned", awsv1.TagEKSClusterName: awsCluster, awsv1.TagNodePool: np.Name,
			awsv1.TagEC2NodeClass: "default", awsv1.TagNodeClaim: c.name,
		},
		Labels: labels,
	})
	if err != nil {
		t.Fatal(err)
	}
	annotations := map[string]string{awsv1.AnnotationInstanceTagged: "true"}
	for k, v := range map[string]string{
		v1.NodePoolHashAnnotationKey: c.poolHash, v1.NodePoolHashVersionAnnotationKey: c.poolVersion,
		awsv1.AnnotationEC2NodeClassHash: c.classHash, awsv1.AnnotationEC2NodeClassHashVersion: c.classVersion,
	} {
		if v != "" {
			annotations[k] = v
		}
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.name, Labels: map[string]string{}, Annotations: annotations, Finalizers: []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: np.Name, UID: np.UID, BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Name}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	for k, v := range node.Labels {
		nc.Labels[k] = v
	}
	delete(nc.Labels, awsemulator.KWOKNodeKey)
	delete(nc.Labels, corev1.LabelHostname)
	e.apply(t, nc)
	nc.Status = v1.NodeClaimStatus{
		NodeName: node.Name, ProviderID: node.Spec.ProviderID, ImageID: image,
		Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable,
	}
	for _, typ := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.StatusConditions().Set(status.Condition{Type: typ, Status: "True", Reason: typ, Message: fmt.Sprintf("as upstream %s left it", c.release)})
	}
	if err := e.Client.Status().Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.applyOwnedNode(t, node, metav1.OwnerReference{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: nc.Name, UID: nc.UID, BlockOwnerDeletion: ptr.To(true)})
	return in.ID, node.Name
}
