// Package plantest builds the snapshots the kubectl-karpenter planner tests
// and benchmark plan over: a KWOK NodePool from a manifest, registered and
// initialized nodes with their NodeClaims, bound and pending pods.
package plantest

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

// Now is the time plans in tests are made at.
var Now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// Base is a snapshot with the KWOKNodeClass and NodePool of testdata/nodepool.yaml
// (defaulted and validated as the apiserver would).
func Base(t testing.TB, nodePoolFile string) *snapshot.Snapshot {
	t.Helper()
	ms, _, err := snapshot.ReadManifests(context.Background(), []string{nodePoolFile}, nil)
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

// PendingPod is a pod the kube-scheduler marked Unschedulable.
func PendingPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(Now.Add(-time.Minute))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
}

// BoundPod runs on node.
func BoundPod(name, node, cpu string) *corev1.Pod {
	p := PendingPod(name, cpu)
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	return p
}

// Node is a registered, initialized KWOK node of the default pool with its NodeClaim.
func Node(t testing.TB, name, instanceType string) (*corev1.Node, *v1.NodeClaim) {
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
	created := metav1.NewTime(Now.Add(-time.Hour))
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

// The controller's code logs through controller-runtime; tests do not read it.
func init() { ctrllog.SetLogger(logr.Discard()) }
