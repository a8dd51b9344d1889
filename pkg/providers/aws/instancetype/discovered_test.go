package instancetype_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Two AMIs as the EC2NodeClass controller resolves an AL2023 alias: the
// standard image for types without GPUs, the NVIDIA one for the others.
var (
	standardAMI = awsv1.AMI{ID: "ami-standard", Name: "al2023-standard", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}}
	nvidiaAMI = awsv1.AMI{ID: "ami-nvidia", Name: "al2023-nvidia", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists},
	}}
)

func withAMIs(amis ...awsv1.AMI) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = amis }
}

// registered is a Node of the listed type it as Karpenter registers it (the
// type's labels), running image and reporting memory, with its NodeClaim.
func registered(it *scheduling.InstanceType, image, memory string) (*corev1.Node, *v1.NodeClaim) {
	labels := it.Requirements.Labels()
	labels[v1.NodeRegisteredLabelKey] = "true"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + it.Name, Labels: labels},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}},
	}
	claim := &v1.NodeClaim{Status: v1.NodeClaimStatus{ImageID: image}}
	return node, claim
}

func memoryOf(t *testing.T, f *fixture, nc *awsv1.EC2NodeClass, name string) (capacity, allocatable resource.Quantity) {
	t.Helper()
	it, err := f.provider.Get(context.Background(), nc, name)
	if err != nil {
		t.Fatal(err)
	}
	return it.Capacity[corev1.ResourceMemory], it.Allocatable()[corev1.ResourceMemory]
}

func expectMemory(t *testing.T, f *fixture, nc *awsv1.EC2NodeClass, name, capacity, allocatable string) {
	t.Helper()
	c, a := memoryOf(t, f, nc, name)
	if c.Cmp(resource.MustParse(capacity)) != 0 || a.Cmp(resource.MustParse(allocatable)) != 0 {
		t.Errorf("%s: memory capacity %s allocatable %s, want %s and %s", name, c.String(), a.String(), capacity, allocatable)
	}
}

// The memory a registered node reports replaces the estimate (8192Mi less
// 7.5%: 7577Mi) at once, even in a list built before; the overhead stays
// what it was, so allocatable drops by as much as capacity. A larger node
// later does not raise it; a smaller one lowers it.
func TestDiscoveredMemoryReplacesTheEstimate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass(withAMIs(standardAMI, nvidiaAMI))
	expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")
	before, _ := f.provider.Get(ctx, nc, "m5.large")

	node, claim := registered(before, standardAMI.ID, "7000Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")
	after, _ := f.provider.Get(ctx, nc, "m5.large")
	if !equalLists(before.Overhead, after.Overhead) {
		t.Errorf("overhead changed from %v to %v", before.Overhead, after.Overhead)
	}
	if got := before.Capacity[corev1.ResourceMemory]; got.Cmp(resource.MustParse("7577Mi")) != 0 {
		t.Errorf("a list handed out before was modified: memory %s", got.String())
	}
	expectMemory(t, f, nc, "m5.xlarge", "15155Mi", "14162Mi") // another type keeps its estimate

	node.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("7500Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")

	node.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("6900Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	expectMemory(t, f, nc, "m5.large", "6900Mi", "6226Mi")
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if r, ok := b[n]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// Upstream keys what a node taught by instance type and the class's AMIs:
// a class with other AMIs keeps the estimate, one with the same AMIs in
// another order (and another name) shares it, and a class whose AMIs change
// starts from the estimate again.
func TestDiscoveredMemoryIsKeyedByTheClassAMIs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass(withAMIs(standardAMI, nvidiaAMI))
	it, err := f.provider.Get(ctx, nc, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	node, claim := registered(it, standardAMI.ID, "7000Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")

	reordered := f.nodeClass(withAMIs(nvidiaAMI, standardAMI), func(c *awsv1.EC2NodeClass) { c.Name = "reordered" })
	expectMemory(t, f, reordered, "m5.large", "7000Mi", "6326Mi")

	newer := standardAMI
	newer.ID = "ami-standard-newer"
	other := f.nodeClass(withAMIs(newer, nvidiaAMI), func(c *awsv1.EC2NodeClass) { c.Name = "other" })
	expectMemory(t, f, other, "m5.large", "7577Mi", "6903Mi")

	nc.Status.AMIs = []awsv1.AMI{newer, nvidiaAMI}
	expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")
}

// A node is recorded only when it runs the AMI its class would launch its
// type with now (upstream's check that the NodeClaim's image is current), and
// only when it reports memory at all.
func TestDiscoveredMemoryOnlyFromNodesOfTheCurrentAMI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass(withAMIs(standardAMI, nvidiaAMI))
	it, err := f.provider.Get(ctx, nc, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, image, memory string
	}{
		{"an AMI the class no longer selects", "ami-old", "7000Mi"},
		{"the AMI of GPU types", nvidiaAMI.ID, "7000Mi"},
		{"no image in the NodeClaim's status", "", "7000Mi"},
		{"no memory reported", standardAMI.ID, "0"},
	} {
		node, claim := registered(it, tc.image, tc.memory)
		f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
		expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")
		if t.Failed() {
			t.Fatalf("recorded from a node with %s", tc.name)
		}
	}

	// The GPU type's own nodes run the NVIDIA image and are recorded.
	g5, err := f.provider.Get(ctx, nc, "g5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	node, claim := registered(g5, nvidiaAMI.ID, "15000Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	if c, _ := memoryOf(t, f, nc, "g5.xlarge"); c.Cmp(resource.MustParse("15000Mi")) != 0 {
		t.Errorf("g5.xlarge memory %s, want 15000Mi", c.String())
	}
}

// What a node taught lasts DiscoveredCapacityTTL (60 days) from the last node
// of the type that reported as little; after that the estimate is back once
// the instance types are resolved again.
func TestDiscoveredMemoryExpires(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	nc := f.nodeClass(withAMIs(standardAMI))
	it, err := f.provider.Get(ctx, nc, "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	node, claim := registered(it, standardAMI.ID, "7000Mi")
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)

	// An equal node 59 days later renews the entry.
	f.clock.Step(instancetype.DiscoveredCapacityTTL - 24*time.Hour)
	f.provider.UpdateCapacityFromNode(ctx, node, claim, nc)
	f.clock.Step(2 * 24 * time.Hour)
	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")

	f.clock.Step(instancetype.DiscoveredCapacityTTL)
	expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")
}
