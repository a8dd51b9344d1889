package capacity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/instancetype/capacity"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

type fixture struct {
	ctx  context.Context
	aws  *launchtest.Env
	cp   *aws.CloudProvider
	ctrl *capacity.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &corev1.NodeList{}, &v1.NodeClaimList{}, &awsv1.EC2NodeClassList{})
	le := launchtest.New(t)
	return &fixture{ctx: ctx, aws: le,
		cp:   aws.New(e.Client, le.InstanceTypes, aws.WithInstances(le.Instances, le.ClusterName)),
		ctrl: capacity.NewController(e.Client, le.InstanceTypes)}
}

// nodeClass stores an EC2NodeClass resolved from the emulator; alias picks
// its AMIs.
func (f *fixture) nodeClass(t *testing.T, name, alias string) *awsv1.EC2NodeClass {
	t.Helper()
	nc := f.aws.NodeClass(t, name)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
	nc.UID = ""
	nc.Status = awsv1.EC2NodeClassStatus{}
	ExpectApplied(f.ctx, t, e.Client, nc)
	f.aws.Resolve(t, nc)
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	return nc
}

// launch creates an on-demand instance of instanceType for class nc through
// the CloudProvider and stores its NodeClaim as launched.
func (f *fixture) launch(t *testing.T, name string, nc *awsv1.EC2NodeClass, instanceType string) *v1.NodeClaim {
	t.Helper()
	claim := launchtest.NodeClaim(name, nc, []string{scheduling.CapacityTypeOnDemand}, instanceType)
	launched, err := f.cp.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	// What the lifecycle controller writes back: the launch's labels and status.
	for k, v := range launched.Labels {
		claim.Labels[k] = v
	}
	claim.Status = launched.Status
	ExpectApplied(f.ctx, t, e.Client, claim)
	return claim
}

// node is the Node of a launched claim as the kubelet registers it (the
// claim's labels) reporting memory, with karpenter.sh/registered set when
// registered is true.
func node(claim *v1.NodeClaim, memory string, registered bool) *corev1.Node {
	labels := map[string]string{}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	if registered {
		labels[v1.NodeRegisteredLabelKey] = "true"
	}
	return fixtures.Node("node-"+claim.Name, fixtures.WithLabels(labels), fixtures.WithProviderID(claim.Status.ProviderID),
		fixtures.WithCapacity(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourceCPU: resource.MustParse("2")}))
}

// memory is the memory capacity and allocatable GetInstanceTypes reports
// for instanceType to a NodePool of class nc.
func (f *fixture) memory(t *testing.T, nc *awsv1.EC2NodeClass, instanceType string) (capacity, allocatable resource.Quantity) {
	t.Helper()
	for _, it := range f.instanceTypes(t, nc) {
		if it.Name == instanceType {
			return it.Capacity[corev1.ResourceMemory], it.Allocatable()[corev1.ResourceMemory]
		}
	}
	t.Fatalf("%s is not listed for EC2NodeClass %s", instanceType, nc.Name)
	return resource.Quantity{}, resource.Quantity{}
}

func (f *fixture) instanceTypes(t *testing.T, nc *awsv1.EC2NodeClass) []*scheduling.InstanceType {
	t.Helper()
	np := fixtures.NodePool("default", fixtures.WithNodeClassRef(&v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}))
	its, err := f.cp.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	return its
}

func expectMemory(t *testing.T, f *fixture, nc *awsv1.EC2NodeClass, instanceType, capacity, allocatable string) {
	t.Helper()
	c, a := f.memory(t, nc, instanceType)
	if c.Cmp(resource.MustParse(capacity)) != 0 || a.Cmp(resource.MustParse(allocatable)) != 0 {
		t.Fatalf("%s of EC2NodeClass %s: memory capacity %s allocatable %s, want %s and %s", instanceType, nc.Name, c.String(), a.String(), capacity, allocatable)
	}
}

// candidates are the instance types the solver keeps for a new node for one
// pod requesting memory, among m5.large and m5.xlarge of class nc.
func (f *fixture) candidates(t *testing.T, nc *awsv1.EC2NodeClass, memory string) []string {
	t.Helper()
	var its []*scheduling.InstanceType
	for _, it := range f.instanceTypes(t, nc) {
		if it.Name == "m5.large" || it.Name == "m5.xlarge" {
			its = append(its, it)
		}
	}
	pod := fixtures.Pod("big", fixtures.WithUID("big"), fixtures.WithRequests("cpu", "500m", "memory", memory))
	res := scheduling.Solve(&scheduling.Input{
		Pods:      []*corev1.Pod{pod},
		NodePools: []*scheduling.NodePool{{Name: "default", InstanceTypes: its}},
	})
	if len(res.NewClaims) != 1 {
		t.Fatalf("%d new claims for one pod (errors %v)", len(res.NewClaims), res.PodErrors)
	}
	var names []string
	for _, it := range res.NewClaims[0].InstanceTypes {
		names = append(names, it.Name)
	}
	return names
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// m5.large is estimated at 8192Mi less 7.5% (7577Mi, 6903Mi allocatable).
// Once a node of it registers reporting 7000Mi, GetInstanceTypes reports
// 7000Mi (6326Mi allocatable: the same kube-reserved and eviction threshold
// taken off), and a pod of 6600Mi, which fits the estimate but not the real
// node, is no longer given an m5.large.
func TestRegisteredNodeMemoryReplacesTheEstimate(t *testing.T) {
	f := setup(t)
	nc := f.nodeClass(t, "default", "al2023@latest")
	expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")
	if got := f.candidates(t, nc, "6600Mi"); !contains(got, "m5.large") {
		t.Fatalf("before any node registered, a 6600Mi pod may go on %v, want m5.large among them", got)
	}

	claim := f.launch(t, "default-small", nc, "m5.large")
	n := node(claim, "7000Mi", true)
	ExpectApplied(f.ctx, t, e.Client, n)
	ExpectReconciled(f.ctx, t, f.ctrl, n)

	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")
	expectMemory(t, f, nc, "m5.xlarge", "15155Mi", "14162Mi")
	if got := f.candidates(t, nc, "6600Mi"); contains(got, "m5.large") || !contains(got, "m5.xlarge") {
		t.Fatalf("a 6600Mi pod may go on %v, want m5.xlarge and no m5.large", got)
	}
	// The next launch of the type expects the memory the node reported.
	next := f.launch(t, "default-next", nc, "m5.large")
	if got := next.Status.Capacity[corev1.ResourceMemory]; got.Cmp(resource.MustParse("7000Mi")) != 0 {
		t.Fatalf("the next m5.large NodeClaim expects memory %s, want 7000Mi", got.String())
	}
}

// The memory is keyed, as upstream keys it, by instance type and the class's
// AMIs: a class selecting other AMIs keeps the estimate for the same type, and
// a node of that class running an AMI its class no longer picks teaches
// nothing to anyone.
func TestOtherAMIsKeepTheEstimate(t *testing.T) {
	f := setup(t)
	nc := f.nodeClass(t, "default", "al2023@latest")
	other := f.nodeClass(t, "other", "bottlerocket@latest")
	if fmt.Sprint(nc.Status.AMIs) == fmt.Sprint(other.Status.AMIs) {
		t.Fatalf("both classes resolved the same AMIs %v", nc.Status.AMIs)
	}
	_, otherBefore := f.memory(t, other, "m5.large")

	claim := f.launch(t, "default-small", nc, "m5.large")
	n := node(claim, "7000Mi", true)
	ExpectApplied(f.ctx, t, e.Client, n)
	ExpectReconciled(f.ctx, t, f.ctrl, n)
	expectMemory(t, f, nc, "m5.large", "7000Mi", "6326Mi")
	if c, a := f.memory(t, other, "m5.large"); c.Cmp(resource.MustParse("7577Mi")) != 0 || a.Cmp(otherBefore) != 0 {
		t.Fatalf("EC2NodeClass other: m5.large memory %s allocatable %s, want the estimate 7577Mi and %s", c.String(), a.String(), otherBefore.String())
	}

	stale := f.launch(t, "other-stale", other, "m5.xlarge")
	stale.Status.ImageID = "ami-0000000000000dead"
	ExpectApplied(f.ctx, t, e.Client, stale)
	n = node(stale, "12000Mi", true)
	ExpectApplied(f.ctx, t, e.Client, n)
	ExpectReconciled(f.ctx, t, f.ctrl, n)
	expectMemory(t, f, other, "m5.xlarge", "15155Mi", "14162Mi")
}

// Running in a manager, the controller learns the memory of nodes that were
// registered before it started (how it recovers what it knew before a
// restart: nothing is kept elsewhere) and of a node once it gets the
// karpenter.sh/registered label; a node not registered yet teaches nothing.
func TestControllerLearnsAtStartAndOnRegistration(t *testing.T) {
	f := setup(t)
	nc := f.nodeClass(t, "default", "al2023@latest")
	early := f.launch(t, "default-early", nc, "m5.large")
	ExpectApplied(f.ctx, t, e.Client, node(early, "7000Mi", true))
	late := f.launch(t, "default-late", nc, "c5.large")
	lateNode := node(late, "3000Mi", false)
	ExpectApplied(f.ctx, t, e.Client, lateNode)

	mgr := env.NewManager(t, e.Config, e.Scheme)
	if err := f.ctrl.Register(f.ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(f.ctx, t, mgr)
	Eventually(t, 30*time.Second, func() error {
		if c, _ := f.memory(t, nc, "m5.large"); c.Cmp(resource.MustParse("7000Mi")) != 0 {
			return fmt.Errorf("m5.large memory %s, want 7000Mi from the node registered before start", c.String())
		}
		return nil
	})
	expectMemory(t, f, nc, "c5.large", "3788Mi", "3114Mi") // not registered: still the estimate

	lateNode = ExpectExists(f.ctx, t, e.Client, lateNode)
	lateNode.Labels[v1.NodeRegisteredLabelKey] = "true"
	ExpectApplied(f.ctx, t, e.Client, lateNode)
	Eventually(t, 30*time.Second, func() error {
		if c, _ := f.memory(t, nc, "c5.large"); c.Cmp(resource.MustParse("3000Mi")) != 0 {
			return fmt.Errorf("c5.large memory %s, want 3000Mi once its node registered", c.String())
		}
		return nil
	})
}

// Only upstream's events reach the controller: a managed node created
// registered, or gaining the registered label; not later updates, deletions,
// unregistered nodes, or nodes of no EC2NodeClass.
func TestTriggers(t *testing.T) {
	managed := func(registered bool) *corev1.Node {
		labels := map[string]string{awsv1.LabelNodeClass: "default"}
		if registered {
			labels[v1.NodeRegisteredLabelKey] = "true"
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}}}
	p := capacity.Triggers
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"created registered", p.Create(event.CreateEvent{Object: managed(true)}), true},
		{"created unregistered", p.Create(event.CreateEvent{Object: managed(false)}), false},
		{"created registered, no EC2NodeClass", p.Create(event.CreateEvent{Object: foreign}), false},
		{"registered label added", p.Update(event.UpdateEvent{ObjectOld: managed(false), ObjectNew: managed(true)}), true},
		{"updated while registered", p.Update(event.UpdateEvent{ObjectOld: managed(true), ObjectNew: managed(true)}), false},
		{"updated unregistered", p.Update(event.UpdateEvent{ObjectOld: managed(false), ObjectNew: managed(false)}), false},
		{"deleted", p.Delete(event.DeleteEvent{Object: managed(true)}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: reconciled %t, want %t", tc.name, tc.got, tc.want)
		}
	}
}

// A node whose NodeClaim is gone, or of no EC2NodeClass, is passed over
// without error; one whose EC2NodeClass cannot be read is retried, as
// upstream does.
func TestNodesWithoutClaimOrClass(t *testing.T) {
	f := setup(t)
	nc := f.nodeClass(t, "default", "al2023@latest")
	claim := f.launch(t, "default-orphan", nc, "m5.large")
	orphan := node(claim, "7000Mi", true)
	orphan.Spec.ProviderID = "aws:///us-west-2a/i-0000000000000orphan"
	ExpectApplied(f.ctx, t, e.Client, orphan)
	ExpectReconciled(f.ctx, t, f.ctrl, orphan)

	unmanaged := node(claim, "7000Mi", true)
	unmanaged.Name = "unmanaged"
	delete(unmanaged.Labels, awsv1.LabelNodeClass)
	ExpectApplied(f.ctx, t, e.Client, unmanaged)
	ExpectReconciled(f.ctx, t, f.ctrl, unmanaged)
	expectMemory(t, f, nc, "m5.large", "7577Mi", "6903Mi")

	// A claim of a class that does not exist (any more).
	lost := fixtures.NodeClaim("lost", fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef("missing")),
		fixtures.WithProviderID("aws:///us-west-2a/i-00000000000000lost"))
	ExpectApplied(f.ctx, t, e.Client, lost)
	lostNode := node(lost, "7000Mi", true)
	lostNode.Labels[awsv1.LabelNodeClass] = "missing"
	ExpectApplied(f.ctx, t, e.Client, lostNode)
	ExpectReconcileFailed(f.ctx, t, f.ctrl, lostNode)
}
