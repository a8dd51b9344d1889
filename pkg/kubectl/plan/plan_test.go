package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/kwok"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// base is a snapshot with the KWOKNodeClass and NodePool of testdata/nodepool.yaml
// (defaulted and validated as the apiserver would).
func base(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	ms, _, err := snapshot.ReadManifests(context.Background(), []string{"testdata/nodepool.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot.New("test")
	if err := s.Apply(ms); err != nil {
		t.Fatal(err)
	}
	s.Notes = nil
	return s
}

func pendingPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
}

func boundPod(name, node, cpu string) *corev1.Pod {
	p := pendingPod(name, cpu)
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	return p
}

// node is a registered, initialized KWOK node of the default pool with its NodeClaim.
func node(t *testing.T, name, instanceType string) (*corev1.Node, *v1.NodeClaim) {
	t.Helper()
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	var alloc corev1.ResourceList
	for _, it := range catalog {
		if it.Name == instanceType {
			alloc = it.Resources.DeepCopy()
		}
	}
	if alloc == nil {
		t.Fatalf("no instance type %s", instanceType)
	}
	alloc[corev1.ResourcePods] = resource.MustParse("110")
	labels := map[string]string{
		v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: instanceType, corev1.LabelTopologyZone: "test-zone-a",
		v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		corev1.LabelHostname: name, v1.NodeInitializedLabelKey: "true", v1.NodeRegisteredLabelKey: "true",
	}
	created := metav1.NewTime(now.Add(-time.Hour))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created},
		Spec:       corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + name},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created},
		Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}},
		Status: v1.NodeClaimStatus{ProviderID: n.Spec.ProviderID, NodeName: name, Capacity: alloc, Allocatable: alloc},
	}
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeConsolidatable} {
		nc.StatusConditions().SetTrue(c)
	}
	return n, nc
}

func compute(t *testing.T, s *snapshot.Snapshot) *plan.Plan {
	t.Helper()
	p, err := plan.PlanSnapshot(context.Background(), s, nil, nil, nil, nil, plan.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPendingPodsBecomeNodeClaims(t *testing.T) {
	s := base(t)
	for i := range 6 {
		if err := s.Add(pendingPod(fmt.Sprintf("web-%d", i), "1")); err != nil {
			t.Fatal(err)
		}
	}
	p := compute(t, s)
	if len(p.Launches) == 0 {
		t.Fatalf("no launches: %+v", p)
	}
	pods := 0
	for _, l := range p.Launches {
		pods += len(l.Pods)
		if l.NodePool != "default" || l.InstanceType == "" || !strings.HasSuffix(l.InstanceType, "-amd64-linux") ||
			l.Zone == "" || l.CapacityType != v1.CapacityTypeOnDemand || l.PricePerHour <= 0 || l.For != "provisioning" {
			t.Errorf("launch %+v", l)
		}
	}
	if pods != 6 || len(p.Pending) != 0 {
		t.Errorf("%d pods placed, pending %v", pods, p.Pending)
	}
	if p.CostPerHourBefore != 0 || p.CostPerHourAfter <= 0 {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
	if len(p.Disruptions) != 0 {
		t.Errorf("disruptions right after a launch: %+v", p.Disruptions)
	}
}

func TestPodNoInstanceTypeFitsStaysPending(t *testing.T) {
	s := base(t)
	if err := s.Add(pendingPod("huge", "5000")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Pending) != 1 || p.Pending[0].Pod != "default/huge" || !strings.Contains(strings.Join(p.Pending[0].Reasons, " "), "default") {
		t.Fatalf("pending = %+v", p.Pending)
	}
	if len(p.Launches) != 0 {
		t.Errorf("launches %+v", p.Launches)
	}
}

// Three empty nodes and a budget of one node: emptiness deletes one, and the
// budget blocks the two others, which the plan says.
func TestEmptyNodesAreDeletedWithinTheBudget(t *testing.T) {
	s := base(t)
	for i := range 3 {
		n, nc := node(t, fmt.Sprintf("empty-%d", i), "c-2x-amd64-linux")
		if err := s.Add(n, nc); err != nil {
			t.Fatal(err)
		}
	}
	p := compute(t, s)
	if len(p.Disruptions) != 1 || p.Disruptions[0].Reason != string(v1.DisruptionReasonEmpty) || len(p.Disruptions[0].Nodes) != 1 ||
		p.Disruptions[0].Action != "delete" {
		t.Fatalf("disruptions = %+v", p.Disruptions)
	}
	if len(p.Budgets) == 0 || p.Budgets[0].NodePool != "default" || p.Budgets[0].Allowed != 0 {
		t.Errorf("budgets = %+v", p.Budgets)
	}
	blocked := 0
	for _, b := range p.Blocked {
		if b.Code == "DisruptionBudget" && b.Blocking {
			blocked++
		}
	}
	if blocked != 2 {
		t.Errorf("blocked = %+v", p.Blocked)
	}
	if p.CostPerHourAfter >= p.CostPerHourBefore || p.CostPerHourBefore <= 0 {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
}

// A big node with one small pod is replaced by a cheaper one (single-node
// consolidation), and the replacement is listed.
func TestUnderutilizedNodeIsReplacedByACheaperOne(t *testing.T) {
	s := base(t)
	n, nc := node(t, "big", "c-16x-amd64-linux")
	if err := s.Add(n, nc, boundPod("small", "big", "500m")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Disruptions) != 1 {
		t.Fatalf("disruptions = %+v, blocked %+v", p.Disruptions, p.Blocked)
	}
	d := p.Disruptions[0]
	if d.Reason != string(v1.DisruptionReasonUnderutilized) || d.Action != "replace" || len(d.Replacements) != 1 ||
		d.Replacements[0].PricePerHour >= d.PricePerHourRemoved || d.Explanation == "" {
		t.Errorf("disruption = %+v", d)
	}
	if p.CostPerHourAfter >= p.CostPerHourBefore {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
}

func TestDoNotDisruptPodBlocksConsolidation(t *testing.T) {
	s := base(t)
	n, nc := node(t, "big", "c-16x-amd64-linux")
	pod := boundPod("precious", "big", "500m")
	pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := s.Add(n, nc, pod); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Disruptions) != 0 || len(p.Blocked) != 1 || p.Blocked[0].Code != "DoNotDisrupt" || !strings.Contains(p.Blocked[0].Message, "precious") {
		t.Fatalf("disruptions %+v blocked %+v", p.Disruptions, p.Blocked)
	}
}

// plan -f old-provisioners/: the v1alpha5 Provisioner is converted to a v1
// NodePool (pointed at the cluster's KWOKNodeClass) and launches for the
// pending pods.
func TestMigrationManifestsArePlanned(t *testing.T) {
	ctx := context.Background()
	ms, notes, err := snapshot.ReadManifests(ctx, []string{"testdata/old-provisioners"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ConvertedFrom == "" {
		t.Fatalf("manifests %+v", ms)
	}
	retarget, err := snapshot.Retarget(ms, "KWOKNodeClass/default")
	if err != nil || len(retarget) != 1 {
		t.Fatalf("retarget %v %v", retarget, err)
	}
	var applied []snapshot.Manifest
	for _, m := range ms {
		if _, ok := m.Object.(*v1.NodePool); ok {
			applied = append(applied, m)
		}
	}
	s := base(t)
	// The migration replaces the default pool: --delete it.
	old := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	old.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("NodePool"))
	deleted := []snapshot.Manifest{{Object: old}}
	for i := range 3 {
		if err := s.Add(pendingPod(fmt.Sprintf("app-%d", i), "3")); err != nil {
			t.Fatal(err)
		}
	}
	p, err := plan.PlanSnapshot(ctx, s, applied, deleted, nil, append(notes, retarget...), plan.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	legacy := 0
	for _, l := range p.Launches {
		if l.NodePool == "legacy" {
			legacy++
			if l.InstanceType != "c-4x-amd64-linux" && l.InstanceType != "m-4x-amd64-linux" {
				t.Errorf("legacy launch of %s", l.InstanceType)
			}
		}
	}
	if legacy == 0 || legacy != len(p.Launches) {
		t.Errorf("nothing launched by the converted pool: %+v", p.Launches)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "converted from v1alpha5 Provisioner legacy") {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestInvalidManifestFailsNamingFileObjectAndField(t *testing.T) {
	_, _, err := snapshot.ReadManifests(context.Background(), []string{"testdata/bad"}, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"testdata/bad/nodepool.yaml", "NodePool broken", "spec.template.spec.requirements"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestScaleAddsAndRemovesPods(t *testing.T) {
	s := base(t)
	// A deployment with no pods yet, scaled to 4.
	d := deployment("web", 0)
	if err := s.Add(d); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale(snapshot.Scale{Namespace: "default", Name: "web", Replicas: 4}); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	pods := 0
	for _, l := range p.Launches {
		pods += len(l.Pods)
	}
	if pods != 4 {
		t.Fatalf("launches for %d pods, want 4: %+v", pods, p.Launches)
	}
	if err := s.Scale(snapshot.Scale{Namespace: "default", Name: "missing", Replicas: 1}); err == nil || !strings.Contains(err.Error(), "default/missing") {
		t.Errorf("err = %v", err)
	}
}
