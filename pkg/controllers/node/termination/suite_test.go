package termination_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// testLabel marks every pod a test creates, so cleanup finds them in any namespace.
const testLabel = "termination-test"

type fixture struct {
	ctx       context.Context
	clk       *clocktesting.FakeClock
	cp        *deleteRecorder
	recorder  *record.FakeRecorder
	lifecycle *lifecycle.Controller
	ctrl      *termination.Controller
}

// setup empties the cluster and returns the node termination controller and
// the NodeClaim lifecycle controller over the KWOK provider, on one fake clock.
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cleanup(ctx, t)
	t.Cleanup(func() { cleanup(context.Background(), t) })
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cp := &deleteRecorder{CloudProvider: kwok.New(ctx, e.Client, clk, catalog)}
	rec := record.NewFakeRecorder(1000)
	ExpectApplied(ctx, t, e.Client, nodeClass(), nodePool())
	return &fixture{
		ctx: ctx, clk: clk, cp: cp, recorder: rec,
		lifecycle: lifecycle.NewController(e.Client, cp, clk, rec),
		ctrl:      termination.NewController(e.Client, cp, clk, rec),
	}
}

func cleanup(ctx context.Context, t *testing.T) {
	t.Helper()
	// Pods bound to a node wait for a kubelet when deleted gracefully; there
	// is none here, so they go with grace period 0.
	Eventually(t, 30*time.Second, func() error {
		pods := &corev1.PodList{}
		if err := e.Client.List(ctx, pods, client.HasLabels{testLabel}); err != nil {
			return err
		}
		for i := range pods.Items {
			if err := e.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
	ExpectCleanedUp(ctx, t, e.Client, &policyv1.PodDisruptionBudgetList{}, &storagev1.VolumeAttachmentList{},
		&v1.NodeClaimList{}, &corev1.NodeList{}, &v1.NodePoolList{}, &kwokv1alpha1.KWOKNodeClassList{})
}

func nodeClass() *kwokv1alpha1.KWOKNodeClass { return fixtures.KWOKNodeClass("default", 0, true) }

func nodePool() *v1.NodePool { return fixtures.NodePool("default") }

// launch creates a NodeClaim, lets the lifecycle controller launch and
// register it (KWOK writes the node at once) and plays the kubelet: the node
// becomes Ready. tgp is the NodeClaim's terminationGracePeriod (0: none).
func (f *fixture) launch(t *testing.T, name string, tgp time.Duration) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	opts := []fixtures.NodeClaimOption{fixtures.WithLabels(map[string]string{v1.NodePoolLabelKey: "default"}), fixtures.WithRequests("cpu", "1")}
	if tgp > 0 {
		opts = append(opts, fixtures.WithTerminationGracePeriod(tgp))
	}
	nc := fixtures.NodeClaim(name, opts...)
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.lifecycle, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !nc.StatusConditions().Get(v1.ConditionTypeRegistered).IsTrue() {
		t.Fatalf("NodeClaim %s not registered: %v", name, nc.Status.Conditions)
	}
	node := ExpectExists(f.ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}})
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	ExpectStatusUpdated(f.ctx, t, e.Client, node)
	return nc, ExpectExists(f.ctx, t, e.Client, node)
}

type podOpt = fixtures.PodOption

func withAnnotation(k, v string) podOpt { return fixtures.WithAnnotations(map[string]string{k: v}) }

var critical = fixtures.PodFunc(func(p *corev1.Pod) {
	p.Namespace = "kube-system"
	p.Spec.PriorityClassName = "system-cluster-critical"
})

var (
	daemon     = fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: types.UID("ds-uid")})
	succeeded  = fixtures.WithPhase(corev1.PodSucceeded)
	tolerating = fixtures.WithTolerations(corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists})
)

// mirror makes the pod the kubelet's mirror of a static pod of node.
func mirror(node *corev1.Node) podOpt {
	return fixtures.PodFunc(func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}
	})
}

// pod creates a Running, Ready pod bound to node. Its terminationGracePeriod
// is 0 unless set: with no kubelet here, a graceful deletion would never
// complete, while an eviction of a 0-grace pod removes it at once.
func (f *fixture) pod(t *testing.T, name string, node *corev1.Node, opts ...podOpt) *corev1.Pod {
	t.Helper()
	base := []podOpt{fixtures.WithLabels(map[string]string{testLabel: "true"}), fixtures.OnNode(node.Name), fixtures.WithTerminationGracePeriodSeconds(0)}
	p := fixtures.Pod(name, append(base, opts...)...)
	// Status is dropped on create; write it after.
	phase := p.Status.Phase
	if phase == "" {
		phase = corev1.PodRunning
	}
	if err := e.Client.Create(f.ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	p.Status = corev1.PodStatus{Phase: phase, StartTime: ptr.To(metav1.Now()),
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	ExpectStatusUpdated(f.ctx, t, e.Client, p)
	return p
}

// kubelet plays the kubelet for terminating pods: their containers stopped,
// they go.
func (f *fixture) kubelet(t *testing.T) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.Client.List(f.ctx, pods, client.HasLabels{testLabel}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			if err := e.Client.Delete(f.ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
}

// pass runs one termination pass over the node and lets the eviction queue
// act on whatever is due.
func (f *fixture) pass(t *testing.T, node *corev1.Node) reconcile.Result {
	t.Helper()
	res := ExpectReconciled(f.ctx, t, f.ctrl, node)
	f.ctrl.Queue.EvictDue(f.ctx)
	return res
}

// gone reports whether the object no longer exists.
func gone(ctx context.Context, t *testing.T, o client.Object) bool {
	t.Helper()
	err := e.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
	if err == nil {
		return false
	}
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return true
}

func terminating(ctx context.Context, t *testing.T, p *corev1.Pod) bool {
	t.Helper()
	cur := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		return client.IgnoreNotFound(err) == nil // gone counts as evicted
	}
	return cur.DeletionTimestamp != nil
}

// pdb creates a PodDisruptionBudget over pods labelled app=<app> and writes
// its status the way the disruption controller of kube-controller-manager
// would (there is none here): the API server's eviction handler reads
// status.disruptionsAllowed.
func (f *fixture) pdb(t *testing.T, name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := fixtures.PodDisruptionBudget(name, fixtures.WithMaxUnavailable(intstr.FromInt32(0)), fixtures.WithSelector(map[string]string{"app": app}))
	if err := e.Client.Create(f.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	f.allow(t, pdb, allowed)
	return pdb
}

// allow sets the PDB's status.disruptionsAllowed, and the rest of its status
// as the disruption controller would from the pods it selects now: its
// healthy pods (Ready, not terminating) expected, allowed fewer desired.
func (f *fixture) allow(t *testing.T, pdb *policyv1.PodDisruptionBudget, allowed int32) {
	t.Helper()
	pdb = ExpectExists(f.ctx, t, e.Client, pdb)
	pods := &corev1.PodList{}
	if err := e.Client.List(f.ctx, pods, client.InNamespace(pdb.Namespace), client.MatchingLabels(pdb.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	healthy := int32(0)
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && isReady(p) {
			healthy++
		}
	}
	f.setPDBStatus(t, pdb, allowed, healthy, max(0, healthy-allowed))
}

// setPDBStatus writes a PDB's status as given, however the pods stand.
func (f *fixture) setPDBStatus(t *testing.T, pdb *policyv1.PodDisruptionBudget, allowed, healthy, desired int32) {
	t.Helper()
	pdb = ExpectExists(f.ctx, t, e.Client, pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       healthy,
	}
	ExpectStatusUpdated(f.ctx, t, e.Client, pdb)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// events drains the recorder and returns what it held.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case ev := <-f.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func hasEvent(evs []string, substrings ...string) bool {
	for _, ev := range evs {
		all := true
		for _, s := range substrings {
			all = all && strings.Contains(ev, s)
		}
		if all {
			return true
		}
	}
	return false
}

func condition(ctx context.Context, t *testing.T, nc *v1.NodeClaim, typ string) *status.Condition {
	t.Helper()
	return ExpectExists(ctx, t, e.Client, nc.DeepCopy()).StatusConditions().Get(typ)
}

// summaryCount reads how many observations a summary holds.
func summaryCount(t *testing.T, m interface{ Write(*dto.Metric) error }) uint64 {
	t.Helper()
	out := &dto.Metric{}
	if err := m.Write(out); err != nil {
		t.Fatal(err)
	}
	return out.GetSummary().GetSampleCount()
}

func histogramCount(t *testing.T, m interface{ Write(*dto.Metric) error }) uint64 {
	t.Helper()
	out := &dto.Metric{}
	if err := m.Write(out); err != nil {
		t.Fatal(err)
	}
	return out.GetHistogram().GetSampleCount()
}

// deleteRecorder is the KWOK provider with every Delete recorded, and
// optionally answered "accepted, still terminating" a number of times first,
// as a real cloud does while an instance shuts down.
type deleteRecorder struct {
	cloudprovider.CloudProvider

	mu         sync.Mutex
	deletes    []string
	slowCycles int
}

func (d *deleteRecorder) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	d.mu.Lock()
	d.deletes = append(d.deletes, nc.Status.ProviderID)
	slow := d.slowCycles > 0
	if slow {
		d.slowCycles--
	}
	d.mu.Unlock()
	if slow {
		return nil
	}
	return d.CloudProvider.Delete(ctx, nc)
}

func (d *deleteRecorder) deleted(providerID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, id := range d.deletes {
		if id == providerID {
			n++
		}
	}
	return n
}

// instanceListed reports whether the provider's List still has the instance.
func (f *fixture) instanceListed(t *testing.T, providerID string) bool {
	t.Helper()
	list, err := f.cp.List(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range list {
		if nc.Status.ProviderID == providerID {
			return true
		}
	}
	return false
}

func keyOf(name string) types.NamespacedName { return types.NamespacedName{Name: name} }
