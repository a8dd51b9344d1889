package disrupter_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// The pods a disruption simulation may move are scheduled again, so the
// input gives them kube-scheduler's default topology spread constraints as
// provisioning gives pending pods: a ReplicaSet's pod without constraints of
// its own gets them with the ReplicaSet's selector, a pod with its own keeps
// its own.
func TestBuildInputGivesBoundPodsTheDefaultTopologySpread(t *testing.T) {
	f := newFixture(t)
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fixtures.DefaultImage}}},
		}},
	}
	ExpectApplied(f.ctx, t, testEnv.Client, rs)
	t.Cleanup(func() {
		if err := testEnv.Client.Delete(context.Background(), rs); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	f.node(t, "node-a", "c-4x-amd64-linux")
	owner := fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)})
	own := corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
	for _, p := range []*corev1.Pod{
		fixtures.Pod("web-0", fixtures.WithLabels(labels), owner, fixtures.OnNode("node-a"), fixtures.WithRequests("cpu", "1"), fixtures.WithPhase(corev1.PodRunning)),
		fixtures.Pod("web-1", fixtures.WithLabels(labels), owner, fixtures.OnNode("node-a"), fixtures.WithRequests("cpu", "1"), fixtures.WithPhase(corev1.PodRunning),
			fixtures.WithTopologySpread(own)),
	} {
		ExpectApplied(f.ctx, t, testEnv.Client, p)
	}
	f.sync(t)

	build := func(defaults []corev1.TopologySpreadConstraint) map[string]*corev1.Pod {
		t.Helper()
		prov := provisioning.NewProvisioner(testEnv.Client, f.cp, f.cluster, f.recorder, f.clock,
			provisioning.Options{SyncTimeout: 2 * time.Second, DefaultTopologySpread: defaults})
		in, _, err := disrupter.BuildInput(f.ctx, disrupter.InputSources{Kube: testEnv.Client, Cluster: f.cluster, Provisioner: prov, CloudProvider: f.cp, Now: f.clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		pods := map[string]*corev1.Pod{}
		for _, n := range in.Nodes {
			if n.Name != "node-a" {
				continue
			}
			for _, p := range n.Pods() {
				pods[p.Name] = p
			}
			for _, p := range n.ReschedulablePods() {
				if pods[p.Name] != p {
					t.Errorf("reschedulable pod %s is not the node's pod", p.Name)
				}
			}
		}
		if len(pods) != 2 {
			t.Fatalf("pods of node-a in the input: %v", pods)
		}
		return pods
	}

	defaults := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	pods := build(defaults)
	got := pods["web-0"].Spec.TopologySpreadConstraints
	if len(got) != 1 || got[0].TopologyKey != corev1.LabelTopologyZone || got[0].MaxSkew != 1 || got[0].WhenUnsatisfiable != corev1.DoNotSchedule ||
		got[0].LabelSelector == nil || len(got[0].LabelSelector.MatchExpressions) != 1 || got[0].LabelSelector.MatchExpressions[0].Key != "app" {
		t.Errorf("web-0, without constraints of its own: %+v, want the zone default with the ReplicaSet's selector", got)
	}
	if got := pods["web-1"].Spec.TopologySpreadConstraints; len(got) != 1 || got[0].TopologyKey != corev1.LabelHostname || got[0].MaxSkew != 2 {
		t.Errorf("web-1 lost its own constraints: %+v", got)
	}
	// Cluster state's pods are left as they were: without the setting the
	// same pod has none.
	if got := build(nil)["web-0"].Spec.TopologySpreadConstraints; len(got) != 0 {
		t.Errorf("web-0 without the setting (cluster state's pod): %+v", got)
	}
}
