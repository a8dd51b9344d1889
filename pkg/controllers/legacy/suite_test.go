package legacy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// instances stands for the cloud's instances behind Machines (v0.31
// launched them; the KWOK provider never heard of them): Get finds the live
// ones, Delete terminates (a first call shuts down, later calls find
// nothing). Everything else is the KWOK provider's.
type instances struct {
	cloudprovider.CloudProvider
	mu      sync.Mutex
	live    map[string]bool
	deletes []string
}

func (c *instances) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live[providerID] {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", providerID))
	}
	return &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: providerID}}, nil
}

func (c *instances) Delete(_ context.Context, nc *v1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes = append(c.deletes, nc.Status.ProviderID)
	if !c.live[nc.Status.ProviderID] {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", nc.Status.ProviderID))
	}
	delete(c.live, nc.Status.ProviderID)
	return nil
}

func (c *instances) deleted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.deletes...)
}

type fixture struct {
	ctx   context.Context
	clk   *clocktesting.FakeClock
	cp    *instances
	rec   *record.FakeRecorder
	term  *legacy.Terminator
	nodes *termination.Controller
	mark  *legacy.Marker
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cleanup := func() {
		ExpectCleanedUp(context.Background(), t, e.Client, &v1alpha5.MachineList{}, &v1alpha5.ProvisionerList{}, &corev1.NodeList{}, &v1.NodePoolList{}, &v1.NodeClaimList{})
	}
	cleanup()
	t.Cleanup(cleanup)
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cp := &instances{CloudProvider: kwok.New(ctx, e.Client, clk, catalog), live: map[string]bool{}}
	rec := record.NewFakeRecorder(1000)
	return &fixture{ctx: ctx, clk: clk, cp: cp, rec: rec,
		term:  legacy.NewTerminator(e.Client, cp, clk, rec),
		nodes: termination.NewController(e.Client, cp, clk, rec),
		mark:  legacy.NewMarker(e.Client, clk),
	}
}

// seed writes a v0.31 Provisioner's Machine and its Node (labels, the
// termination finalizer on both, the Node owned by the Machine) with a live
// instance behind them.
func (f *fixture) seed(t *testing.T, prov *v1alpha5.Provisioner, name string) (*v1alpha5.Machine, *corev1.Node) {
	t.Helper()
	pid := "aws:///us-west-2a/i-" + name
	f.cp.live[pid] = true
	m := &v1alpha5.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer},
			Labels:          map[string]string{v1alpha5.ProvisionerNameLabelKey: prov.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1alpha5", Kind: "Provisioner", Name: prov.Name, UID: prov.UID}},
		},
		Spec: v1alpha5.MachineSpec{MachineTemplateRef: &v1alpha5.MachineTemplateRef{Name: "default"}},
	}
	ExpectApplied(f.ctx, t, e.Client, m)
	m.Status = v1alpha5.MachineStatus{NodeName: "node-" + name, ProviderID: pid}
	ExpectStatusUpdated(f.ctx, t, e.Client, m)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + name, Finalizers: []string{v1.TerminationFinalizer},
			Labels:          map[string]string{v1alpha5.ProvisionerNameLabelKey: prov.Name, v1.NodeInitializedLabelKey: "true", "karpenter.sh/registered": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1alpha5", Kind: "Machine", Name: m.Name, UID: m.UID, BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.NodeSpec{ProviderID: pid},
	}
	ExpectApplied(f.ctx, t, e.Client, node)
	node.Status = corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	return m, node
}

func provisioner(name string) *v1alpha5.Provisioner {
	return &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha5.ProvisionerSpec{ProviderRef: &v1alpha5.MachineTemplateRef{Name: "default"}}}
}

// finalize drives the Terminator and the Node termination controller, as
// their watches would, until the Machine is gone.
func (f *fixture) finalize(t *testing.T, m *v1alpha5.Machine, node *corev1.Node) {
	t.Helper()
	for i := 0; i < 20; i++ {
		ExpectReconciled(f.ctx, t, f.term, m)
		if !exists(f.ctx, t, node) && !exists(f.ctx, t, m) {
			return
		}
		if exists(f.ctx, t, node) {
			ExpectReconciled(f.ctx, t, f.nodes, node)
		}
	}
	t.Fatalf("machine %s / node %s not finalized: machine exists %v, node exists %v, instance deletes %v",
		m.Name, node.Name, exists(f.ctx, t, m), exists(f.ctx, t, node), f.cp.deleted())
}

func exists(ctx context.Context, t *testing.T, obj client.Object) bool {
	t.Helper()
	err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
