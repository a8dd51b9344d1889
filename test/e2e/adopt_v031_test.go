package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// TestAdoptV031Install: a cluster as upstream Karpenter v0.31 leaves it
// (Provisioners, an AWSNodeTemplate, Machines whose instances run in the AWS
// emulator, their Nodes labelled and finalized as v0.31 did, a Deployment
// with a PDB running on them) switches to this controller with the NodePool
// and EC2NodeClass karpenter-convert makes. Nothing is relaunched on
// start-up; then the three paths of the v0.32 migration guide run at once:
// Provisioner "a" is tainted (its two Machines drift and are replaced,
// replacement first), Provisioner "b" is deleted with --cascade=foreground,
// and the Node of Provisioner "c"'s Machine is deleted by hand. The pods end
// on NodePool nodes, no PDB is broken, no pod is lost, a
// karpenter.sh/do-not-evict pod holds its node until it leaves, and no
// Machine, legacy Node or legacy instance is left.
func TestAdoptV031Install(t *testing.T) {
	t.Parallel()
	const replicas = 8
	legacyIDs := map[string]bool{}
	e := startAWS(t, awsOptions{seed: func(t testing.TB, e *awsEnv) {
		e.apply(t, &awsv1alpha1.AWSNodeTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: awsv1alpha1.AWSNodeTemplateSpec{AWS: awsv1alpha1.AWS{
				SubnetSelector:        map[string]string{"karpenter.sh/discovery": awsCluster},
				SecurityGroupSelector: map[string]string{"karpenter.sh/discovery": awsCluster},
			}},
		})
		for name, machines := range map[string]int{"a": 2, "b": 1, "c": 1} {
			prov := &v1alpha5.Provisioner{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha5.ProvisionerSpec{
					Requirements: []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
					ProviderRef:  &v1alpha5.MachineTemplateRef{Name: "default"},
				},
			}
			e.apply(t, prov)
			for i := 0; i < machines; i++ {
				id := seedV031Machine(t, e, prov, fmt.Sprintf("%s-%d", name, i))
				legacyIDs[id] = true
			}
		}
		// What karpenter-convert makes of them (one NodePool for the three:
		// the only NodePool succeeds every Provisioner).
		np := awsNodePool("default", "default", 4)
		// Two: the node deleted by hand stays (its do-not-evict pod) and
		// counts against the budget, as any deleting node does.
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}}
		e.apply(t, ec2NodeClass("default", "al2023@latest"), np,
			kit.Deployment("default", "web", replicas, "500m", "256Mi", false), maxUnavailablePDB("web", 1))
		e.waitRunningOnLegacy(t, replicas)
		// A v0.31 pod that must not be evicted, on the node deleted by hand.
		mc := &v1alpha5.Machine{}
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: "c-0"}, mc); err != nil {
			t.Fatal(err)
		}
		e.apply(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default", Labels: map[string]string{"app": "guarded"},
				Annotations: map[string]string{"karpenter.sh/do-not-evict": "true"}},
			Spec: corev1.PodSpec{NodeName: mc.Status.NodeName, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		})
	}})
	e.waitNodeClassReady(t, "default")

	// Adopted as they are: conditions written, nothing launched.
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		ms := &v1alpha5.MachineList{}
		if err := e.Client.List(e.ctx, ms); err != nil {
			return false, err
		}
		for i := range ms.Items {
			if !machineCondition(&ms.Items[i], legacy.ConditionAdopted, corev1.ConditionTrue) || !machineCondition(&ms.Items[i], legacy.ConditionDrifted, corev1.ConditionFalse) {
				return false, nil
			}
		}
		return len(ms.Items) == 4, nil
	}); err != nil {
		t.Fatalf("machines not marked Adopted and not drifted: %v (karpenter log %s)", err, e.karpenter.LogPath)
	}
	e.expectNoNewNodeClaims(t, 0, 5*time.Second)

	w := startInvariantWatcher(t, e.provisioningEnv, "default")
	// (a) taint the old Provisioner: its Machines drift.
	prov := &v1alpha5.Provisioner{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Name: "a"}, prov); err != nil {
		t.Fatal(err)
	}
	stored := prov.DeepCopy()
	prov.Spec.Taints = []corev1.Taint{{Key: "karpenter.sh/legacy", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	if err := e.Client.Patch(e.ctx, prov, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	// (b) kubectl delete provisioner b --cascade=foreground
	if err := e.Client.Delete(e.ctx, &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	// (c) kubectl delete node <the node of c's Machine>
	mc := &v1alpha5.Machine{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Name: "c-0"}, mc); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: mc.Status.NodeName}}); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	replacedFirst := map[string]bool{}
	if err := poll(e.ctx, 4*time.Minute, func() (bool, error) {
		ms := &v1alpha5.MachineList{}
		if err := e.Client.List(e.ctx, ms); err != nil {
			return false, err
		}
		for _, m := range ms.Items {
			if m.Annotations[legacy.ReplacementsAnnotation] != "" {
				replacedFirst[m.Name] = true
			}
		}
		// c-0 stays while its do-not-evict pod runs.
		if len(ms.Items) != 1 || ms.Items[0].Name != "c-0" {
			return false, nil
		}
		on, err := e.webNodes()
		if err != nil {
			return false, err
		}
		running := 0
		for _, n := range on {
			if n.Labels[v1.NodePoolLabelKey] == "" {
				return false, nil
			}
			running++
		}
		return running == replicas, nil
	}); err != nil {
		ms := &v1alpha5.MachineList{}
		_ = e.Client.List(e.ctx, ms)
		var left []string
		for _, m := range ms.Items {
			left = append(left, fmt.Sprintf("%s %+v", m.Name, m.Status.Conditions))
		}
		t.Fatalf("workloads not on NodePool nodes with every Machine but c-0 gone within 4m: %v; machines left: %s (karpenter log %s)", err, strings.Join(left, "; "), e.karpenter.LogPath)
	}
	// The drain of c-0's node evicted the web pods and waits for the
	// do-not-evict pod; once its owner removes it, c-0 goes.
	guarded := &corev1.Pod{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Namespace: "default", Name: "guarded"}, guarded); err != nil {
		t.Fatalf("the karpenter.sh/do-not-evict pod is gone: %v", err)
	}
	if guarded.DeletionTimestamp != nil || guarded.Status.Phase != corev1.PodRunning {
		t.Fatalf("the karpenter.sh/do-not-evict pod was evicted (phase %s, deleting %v)", guarded.Status.Phase, guarded.DeletionTimestamp)
	}
	if err := e.Client.Delete(e.ctx, guarded, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		ms := &v1alpha5.MachineList{}
		if err := e.Client.List(e.ctx, ms); err != nil {
			return false, err
		}
		return len(ms.Items) == 0, nil
	}); err != nil {
		t.Fatalf("machine c-0 not gone once its do-not-evict pod left: %v", err)
	}
	claims := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, claims); err != nil {
		t.Fatal(err)
	}
	t.Logf("4 machines retired by the three paths (one held by a do-not-evict pod until it left) and %d pods on NodePool nodes %s after the paths began; %d NodeClaims; replaced first: %v",
		replicas, time.Since(started).Round(time.Second), len(claims.Items), replacedFirst)
	if !replacedFirst["a-0"] && !replacedFirst["a-1"] {
		t.Errorf("no drifted machine of provisioner a was seen with replacement NodeClaims before its deletion (seen: %v)", replacedFirst)
	}

	// The user removes what is left of the old install.
	for _, name := range []string{"a", "c"} {
		if err := e.Client.Delete(e.ctx, &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		ps := &v1alpha5.ProvisionerList{}
		if err := e.Client.List(e.ctx, ps); err != nil {
			return false, err
		}
		return len(ps.Items) == 0, nil
	}); err != nil {
		t.Errorf("provisioners not gone: %v", err)
	}

	e.waitRunning(t, replicas, time.Minute)
	w.Assert(t)
	if w.KarpenterRemovals() == 0 {
		t.Errorf("the invariant watcher saw no pod removed by Karpenter: the drains were not observed")
	}
	// No orphan: every Node is a NodePool's, every legacy instance is gone,
	// every live instance has its NodeClaim.
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		nodes := &corev1.NodeList{}
		if err := e.Client.List(e.ctx, nodes); err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if n.Labels[v1.NodePoolLabelKey] == "" {
				return false, nil
			}
		}
		for _, in := range e.liveInstances() {
			if legacyIDs[in.ID] {
				return false, nil
			}
		}
		return e.instanceMismatch() == "", nil
	}); err != nil {
		nodes := &corev1.NodeList{}
		_ = e.Client.List(e.ctx, nodes)
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name+"="+n.Labels[v1.NodePoolLabelKey])
		}
		var live []string
		for _, in := range e.liveInstances() {
			live = append(live, fmt.Sprintf("%s(legacy=%v)", in.ID, legacyIDs[in.ID]))
		}
		t.Errorf("orphans left: nodes %v, live instances %v, mismatch %q", names, live, e.instanceMismatch())
	}
}

// seedV031Machine makes what v0.31 leaves for one node of prov: a running
// instance tagged as v0.31 tagged it, the Machine (finalizer, owner
// Provisioner, launched/registered/initialized) and the Node (v0.31's labels,
// finalizer and owner Machine). It returns the instance ID.
func seedV031Machine(t testing.TB, e *awsEnv, prov *v1alpha5.Provisioner, name string) string {
	t.Helper()
	labels := map[string]string{
		v1alpha5.ProvisionerNameLabelKey:      prov.Name,
		v1.CapacityTypeLabelKey:               v1.CapacityTypeOnDemand,
		"karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m5",
		"karpenter.k8s.aws/instance-size": "large", "karpenter.k8s.aws/instance-cpu": "2",
	}
	in, node, err := e.emu.SeedRunningInstance(awsemulator.PreexistingInstance{
		InstanceType: "m5.large",
		Tags: map[string]string{
			"kubernetes.io/cluster/" + awsCluster: "owned", "karpenter.sh/managed-by": awsCluster,
			v1alpha5.ProvisionerNameLabelKey: prov.Name, "Name": awsCluster + "-karpenter",
		},
		Labels: labels,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &v1alpha5.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{}, Finalizers: []string{v1.TerminationFinalizer},
			Annotations:     map[string]string{"karpenter.sh/provisioner-hash": "8931284743946573584"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1alpha5", Kind: "Provisioner", Name: prov.Name, UID: prov.UID, BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: v1alpha5.MachineSpec{
			Requirements: []corev1.NodeSelectorRequirement{
				{Key: v1alpha5.ProvisionerNameLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{prov.Name}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			MachineTemplateRef: &v1alpha5.MachineTemplateRef{Kind: "AWSNodeTemplate", APIVersion: "karpenter.k8s.aws/v1alpha1", Name: "default"},
		},
	}
	for k, v := range node.Labels {
		m.Labels[k] = v
	}
	delete(m.Labels, awsemulator.KWOKNodeKey)
	delete(m.Labels, corev1.LabelHostname)
	e.apply(t, m)
	m.Status = v1alpha5.MachineStatus{
		NodeName: node.Name, ProviderID: node.Spec.ProviderID,
		Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable,
	}
	for _, c := range []string{"MachineLaunched", "MachineRegistered", "MachineInitialized", "Ready"} {
		m.Status.Conditions = append(m.Status.Conditions, v1alpha5.Condition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	}
	if err := e.Client.Status().Update(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	e.applyOwnedNode(t, node, metav1.OwnerReference{APIVersion: "karpenter.sh/v1alpha5", Kind: "Machine", Name: m.Name, UID: m.UID, BlockOwnerDeletion: ptr.To(true)})
	return in.ID
}

// applyOwnedNode writes node as an older Karpenter left it: registered and initialized,
// with the termination finalizer and owned by the Machine or NodeClaim of owner.
func (e *awsEnv) applyOwnedNode(t testing.TB, node *corev1.Node, owner metav1.OwnerReference) {
	t.Helper()
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	node.Labels[v1.NodeInitializedLabelKey] = "true"
	node.Finalizers = []string{v1.TerminationFinalizer}
	node.OwnerReferences = []metav1.OwnerReference{owner}
	st := node.Status
	e.apply(t, node)
	// A create drops the status: write it the way the kubelet would.
	if len(node.Status.Allocatable) == 0 {
		node.Status = st
		if err := e.Client.Status().Update(e.ctx, node); err != nil {
			t.Fatal(err)
		}
	}
}

// waitRunningOnLegacy waits until n pods of web run (on the seeded nodes: no
// other node exists yet).
func (e *awsEnv) waitRunningOnLegacy(t testing.TB, n int) {
	t.Helper()
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		on, err := e.webNodes()
		return err == nil && len(on) == n, err
	}); err != nil {
		t.Fatalf("%d web pods not running on the v0.31 nodes: %v", n, err)
	}
}

// webNodes maps each Running pod of web to its Node.
func (e *awsEnv) webNodes() (map[string]*corev1.Node, error) {
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		return nil, err
	}
	out := map[string]*corev1.Node{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		n := &corev1.Node{}
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: p.Spec.NodeName}, n); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		out[p.Name] = n
	}
	return out, nil
}

func machineCondition(m *v1alpha5.Machine, typ string, want corev1.ConditionStatus) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == typ {
			return c.Status == want
		}
	}
	return false
}
