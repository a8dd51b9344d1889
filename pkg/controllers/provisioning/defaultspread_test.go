package provisioning_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// zoneSpread is a cluster whose kube-scheduler spreads pods without
// constraints of their own one per zone at most ahead of the others.
var zoneSpread = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}

// withDefaultSpread gives the fixture a provisioner configured with
// kube-scheduler's default topology spread constraints.
func (f *fixture) withDefaultSpread(constraints []corev1.TopologySpreadConstraint) {
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second, DefaultTopologySpread: constraints})
}

// replicaSet creates a ReplicaSet selecting app=name (no controller makes its
// pods in the test API server) and returns pods it controls, pending.
func replicaSet(ctx context.Context, t *testing.T, name string, replicas int) []*corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fixtures.DefaultImage}}},
		}},
	}
	ExpectApplied(ctx, t, testEnv.Client, rs)
	t.Cleanup(func() {
		if err := testEnv.Client.Delete(context.Background(), rs); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	owner := fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: rs.UID, Controller: ptr.To(true)})
	var pods []*corev1.Pod
	for i := 0; i < replicas; i++ {
		pods = append(pods, fixtures.Pod(fmt.Sprintf("%s-%d", name, i), fixtures.WithLabels(labels), owner,
			fixtures.WithTolerations(corev1.Toleration{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists}),
			fixtures.WithRequests("cpu", "1"), fixtures.Unschedulable()))
	}
	return pods
}

// A ReplicaSet's pods that declare no topology spread constraints are
// provisioned as kube-scheduler will place them under its default
// constraints: one zone each, where they would otherwise share one node.
func TestDefaultTopologySpreadSpreadsPodsWithoutConstraints(t *testing.T) {
	f := newFixture(t)
	f.withDefaultSpread(zoneSpread)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	for _, p := range replicaSet(f.ctx, t, "web", 3) {
		ExpectApplied(f.ctx, t, testEnv.Client, p)
	}
	res := f.schedule(t)
	zones := map[string]int{}
	for _, nc := range res.NodeClaims {
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				zones[r.Values[0]]++
			}
		}
	}
	if len(res.NodeClaims) != 3 || len(zones) != 3 {
		t.Fatalf("%d nodeclaims in zones %v, want one in each of the 3 zones (errors %v)", len(res.NodeClaims), zones, res.Solve.PodErrors)
	}
}

// The solver input gives the defaults, with the ReplicaSet's selector, to the
// pods that declare none, and leaves a pod's own constraints as they are; the
// pods given are not modified.
func TestSolverInputGivesDefaultsOnlyToPodsWithoutTheirOwn(t *testing.T) {
	f := newFixture(t)
	f.withDefaultSpread(zoneSpread)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	pods := replicaSet(f.ctx, t, "web", 2)
	own := corev1.TopologySpreadConstraint{MaxSkew: 4, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	pods[1].Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{own}
	f.sync(t)

	in, _, err := f.provisioner.SolverInput(f.ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	want := *zoneSpread[0].DeepCopy()
	want.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
	if got := in.Pods[0].Spec.TopologySpreadConstraints; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("pod without constraints: %+v, want %+v", got, want)
	}
	if got := in.Pods[1].Spec.TopologySpreadConstraints; len(got) != 1 || !reflect.DeepEqual(got[0], own) {
		t.Errorf("pod with its own constraint: %+v, want only its own %+v", got, own)
	}
	if len(pods[0].Spec.TopologySpreadConstraints) != 0 {
		t.Error("the pod given was modified")
	}

	// Without the setting, nothing is added.
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second})
	in, _, err = f.provisioner.SolverInput(f.ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Pods[0].Spec.TopologySpreadConstraints) != 0 {
		t.Errorf("constraints without the setting: %+v", in.Pods[0].Spec.TopologySpreadConstraints)
	}
}
