package candidacy_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// driftingCloud is the KWOK provider with IsDrifted overridden: the KWOK
// provider never reports drift, a real cloud's would (e.g. a new image).
type driftingCloud struct {
	cloudprovider.CloudProvider
	reason cloudprovider.DriftReason
	err    error
	// instanceTypes, when set, replaces the catalog GetInstanceTypes returns.
	instanceTypes []*scheduling.InstanceType
}

func (d *driftingCloud) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	if d.instanceTypes != nil {
		return d.instanceTypes, nil
	}
	return d.CloudProvider.GetInstanceTypes(ctx, np)
}

func (d *driftingCloud) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return d.reason, d.err
}

type fixture struct {
	ctx   context.Context
	clk   *clocktesting.FakeClock
	cloud *driftingCloud
	ctrl  *candidacy.Controller
}

// setup empties the cluster and returns the controller on a fake clock that
// starts on a whole second (the API stores condition times in seconds) over
// the KWOK provider, whose drift answer the test can set.
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &v1.NodePoolList{}, &corev1.NodeList{})
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	cloud := &driftingCloud{CloudProvider: kwok.New(ctx, e.Client, clk, catalog)}
	return &fixture{ctx: ctx, clk: clk, cloud: cloud, ctrl: candidacy.NewController(e.Client, cloud, clk)}
}

func nodePool(name string, consolidateAfter string) *v1.NodePool {
	return fixtures.NodePool(name,
		fixtures.WithTemplateLabels(map[string]string{"team": "a"}),
		fixtures.WithRequirements(
			fixtures.Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
			fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)),
		fixtures.WithConsolidateAfter(consolidateAfter))
}

// launched creates a NodeClaim of np as the provisioner and the lifecycle
// controller leave it: stamped with the NodePool's current hash, labelled with
// what the instance resolved, and Launched, Registered and (when initialized)
// Initialized at the clock's current time.
func launched(f *fixture, t *testing.T, np *v1.NodePool, name string, initialized bool) *v1.NodeClaim {
	t.Helper()
	np = ExpectExists(f.ctx, t, e.Client, np.DeepCopy()) // as stored, with defaults
	labels := map[string]string{
		v1.NodePoolLabelKey:            np.Name,
		v1.CapacityTypeLabelKey:        v1.CapacityTypeOnDemand,
		corev1.LabelOSStable:           "linux",
		corev1.LabelInstanceTypeStable: "c-2x-amd64-linux",
		corev1.LabelTopologyZone:       "test-zone-a",
	}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	nc := fixtures.NodeClaim(name,
		fixtures.WithLabels(labels),
		fixtures.WithAnnotations(map[string]string{
			v1.NodePoolHashAnnotationKey:        np.Hash(),
			v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion,
		}),
		fixtures.WithRequirements(np.Spec.Template.Spec.Requirements...),
		fixtures.WithTaints(np.Spec.Template.Spec.Taints...),
		fixtures.WithNodeClassRef(np.Spec.Template.Spec.NodeClassRef),
		fixtures.WithProviderID("kwok://"+name), fixtures.WithNodeName(name))
	conds := nc.StatusConditions()
	conds.Now = f.clk.Now
	conds.SetTrue(v1.ConditionTypeLaunched)
	conds.SetTrue(v1.ConditionTypeRegistered)
	if initialized {
		conds.SetTrue(v1.ConditionTypeInitialized)
	} else {
		conds.SetUnknown(v1.ConditionTypeInitialized, "NodeNotReady", "Node status is NotReady")
	}
	ExpectApplied(f.ctx, t, e.Client, nc)
	return nc
}

func (f *fixture) reconcile(t *testing.T, nc *v1.NodeClaim) (time.Duration, *v1.NodeClaim) {
	t.Helper()
	res := ExpectReconciled(f.ctx, t, f.ctrl, nc)
	return res.RequeueAfter, ExpectExists(f.ctx, t, e.Client, nc.DeepCopy())
}

// update applies mutate to the stored NodePool.
func update(f *fixture, t *testing.T, np *v1.NodePool, mutate func(*v1.NodePool)) {
	t.Helper()
	cur := ExpectExists(f.ctx, t, e.Client, np.DeepCopy())
	mutate(cur)
	if err := e.Client.Update(f.ctx, cur); err != nil {
		t.Fatalf("updating NodePool %s: %v", np.Name, err)
	}
}

func cond(nc *v1.NodeClaim, typ string) *status.Condition { return nc.StatusConditions().Get(typ) }

func statusTrue(typ string, at time.Time) status.Condition {
	return status.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, LastTransitionTime: metav1.NewTime(at)}
}

// nodeFor creates the Node of a launched NodeClaim (owned by it, as after
// registration).
func nodeFor(f *fixture, t *testing.T, nc *v1.NodeClaim) *corev1.Node {
	t.Helper()
	node := fixtures.Node(nc.Status.NodeName, fixtures.WithLabels(nc.Labels),
		fixtures.WithOwners(metav1.OwnerReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID}),
		fixtures.WithProviderID(nc.Status.ProviderID))
	ExpectApplied(f.ctx, t, e.Client, node)
	return node
}
