package state_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// limitedNamespace creates a namespace whose LimitRange gives every container
// without its own cpu a request and a limit of cpu, as admission applies it.
func limitedNamespace(t *testing.T, name, cpu string) {
	t.Helper()
	ctx := context.Background()
	ExpectApplied(ctx, t, testEnv.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: name},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		})
	t.Cleanup(func() {
		_ = testEnv.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(name), client.GracePeriodSeconds(0))
		_ = testEnv.Client.DeleteAllOf(ctx, &appsv1.DaemonSet{}, client.InNamespace(name))
	})
}

// daemonPod is a pod controlled by ds, as the DaemonSet controller creates it:
// the template's labels and spec, pinned to nodeName ("" for none yet) by a
// required node affinity on the node's name, created at created.
func daemonPod(ds *appsv1.DaemonSet, name, nodeName string, created time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels,
			CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	pin := "node-of-" + name
	if nodeName != "" {
		pin = nodeName
	}
	a := p.Spec.Affinity
	if a == nil {
		a = &corev1.Affinity{}
		p.Spec.Affinity = a
	}
	a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pin}}}}},
	}}
	p.Spec.NodeName = nodeName
	return p
}

// names lists the pods as namespace/name.
func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

func cpuOf(p *corev1.Pod) resource.Quantity {
	total := resource.Quantity{}
	for _, c := range p.Spec.Containers {
		total.Add(c.Resources.Requests[corev1.ResourceCPU])
	}
	return total
}

// A DaemonSet whose template requests no cpu, in a namespace whose LimitRange
// defaults cpu to 2: its pods are admitted with 2 cpu, and the overhead the
// solver reads is 2 cpu once one of them exists (the template, requesting
// nothing, before that).
func TestDaemonSetOverheadIsItsAdmittedPod(t *testing.T) {
	f := newFixture(t)
	limitedNamespace(t, "limited-overhead", "2")
	ds := fixtures.DaemonSet("agent", fixtures.WithNamespace("limited-overhead"))
	ExpectApplied(f.ctx, t, testEnv.Client, ds)
	ExpectReconciled(f.ctx, t, f.daemonSets, ds)

	in, err := f.cluster.Snapshot(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.DaemonSetPods) != 1 || in.DaemonSetPods[0].Name != "agent" {
		t.Fatalf("without a pod, the template: %v", names(in.DaemonSetPods))
	}
	if got := cpuOf(in.DaemonSetPods[0]); !got.IsZero() {
		t.Fatalf("template overhead %s cpu, want none", got.String())
	}

	pod := daemonPod(ds, "agent-x1", "", time.Now())
	ExpectApplied(f.ctx, t, testEnv.Client, pod)
	admitted := ExpectExists(f.ctx, t, testEnv.Client, pod)
	if got := cpuOf(admitted); got.Cmp(resource.MustParse("2")) != 0 {
		t.Fatalf("the LimitRange admitted the pod with %s cpu, want 2", got.String())
	}
	ExpectReconciled(f.ctx, t, f.pods, pod)

	in, err = f.cluster.Snapshot(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.DaemonSetPods) != 1 {
		t.Fatalf("daemonset pods: %v", names(in.DaemonSetPods))
	}
	got := in.DaemonSetPods[0]
	if cpu := cpuOf(got); cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Fatalf("overhead %s cpu, want the admitted pod's 2", cpu.String())
	}
	if got.Spec.NodeName != "" || got.Spec.Affinity != nil {
		t.Errorf("the pod for a new node keeps node %q or affinity %v (the template has none)", got.Spec.NodeName, got.Spec.Affinity)
	}
	if got.Namespace != "limited-overhead" || got.Labels["app"] != "agent" {
		t.Errorf("namespace %q labels %v", got.Namespace, got.Labels)
	}
}

// The template's required node affinity replaces the one the DaemonSet
// controller pins its pod to a node with; preferences and pod affinity stay.
func TestDaemonSetPodTakesTheTemplatesRequiredNodeAffinity(t *testing.T) {
	f := newFixture(t)
	zoneA := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-a"}}}}
	ds := fixtures.DaemonSet("zonal", fixtures.WithRequests("cpu", "300m"), fixtures.WithRequiredNodeAffinity(zoneA),
		fixtures.WithPreferredNodeAffinity(1, zoneA))
	ExpectApplied(f.ctx, t, testEnv.Client, ds)
	ExpectReconciled(f.ctx, t, f.daemonSets, ds)
	pod := daemonPod(ds, "zonal-x1", "", time.Now())
	pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = ds.Spec.Template.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	ExpectApplied(f.ctx, t, testEnv.Client, pod)
	ExpectReconciled(f.ctx, t, f.pods, pod)

	pods := f.cluster.DaemonSetPods()
	if len(pods) != 1 || pods[0].Name != "zonal-x1" {
		t.Fatalf("daemonset pods: %v", names(pods))
	}
	na := pods[0].Spec.Affinity.NodeAffinity
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) != 1 || len(req.NodeSelectorTerms[0].MatchFields) != 0 ||
		len(req.NodeSelectorTerms[0].MatchExpressions) != 1 || req.NodeSelectorTerms[0].MatchExpressions[0].Key != corev1.LabelTopologyZone {
		t.Fatalf("required node affinity %v, want the template's zone term", req)
	}
	if len(na.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("preferred node affinity %v, want the pod's", na.PreferredDuringSchedulingIgnoredDuringExecution)
	}
}

// The newest pod of the DaemonSet is the example, bound or pending; an older
// one arriving later does not replace it. Deleted, the example stays until
// another pod of the DaemonSet is seen; a deleted DaemonSet contributes
// nothing. While nothing changes, the same pod is returned.
func TestDaemonSetExampleIsItsNewestPod(t *testing.T) {
	f := newFixture(t)
	ds := fixtures.DaemonSet("agent", fixtures.WithRequests("cpu", "100m"))
	ExpectApplied(f.ctx, t, testEnv.Client, ds)
	ExpectReconciled(f.ctx, t, f.daemonSets, ds)
	now := time.Now().Truncate(time.Second)
	older := daemonPod(ds, "agent-old", "node-1", now.Add(-time.Hour))
	older.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("400m")
	newer := daemonPod(ds, "agent-new", "", now)
	newer.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("700m")
	// The API server sets creationTimestamp itself: state is fed the objects as given.
	f.cluster.UpdatePod(newer)
	f.cluster.UpdatePod(older)
	first := f.cluster.DaemonSetPods()
	if len(first) != 1 || first[0].Name != "agent-new" {
		t.Fatalf("example %v, want the newest pod agent-new", names(first))
	}
	if again := f.cluster.DaemonSetPods(); again[0] != first[0] {
		t.Error("an unchanged DaemonSet's pod was built again")
	}
	f.cluster.UpdateDaemonSet(ds)
	if again := f.cluster.DaemonSetPods(); again[0] != first[0] {
		t.Error("a DaemonSet update of the same generation rebuilt its pod")
	}

	f.cluster.DeletePod(client.ObjectKeyFromObject(newer))
	if got := f.cluster.DaemonSetPods(); len(got) != 1 || got[0].Name != "agent-new" {
		t.Fatalf("after its deletion the example is %v, want agent-new kept", names(got))
	}
	f.cluster.UpdatePod(older)
	got := f.cluster.DaemonSetPods()
	if len(got) != 1 || got[0].Name != "agent-old" {
		t.Fatalf("after the deletion the next pod seen takes over: %v", names(got))
	}
	if cpu := cpuOf(got[0]); cpu.Cmp(resource.MustParse("400m")) != 0 {
		t.Fatalf("overhead %s cpu, want agent-old's 400m", cpu.String())
	}
	// Another DaemonSet's pod, and a pod no DaemonSet controls, change nothing.
	stranger := daemonPod(fixtures.DaemonSet("other"), "other-x", "node-1", now.Add(time.Hour))
	f.cluster.UpdatePod(stranger)
	f.cluster.UpdatePod(fixtures.Pod("plain", fixtures.OnNode("node-1"), fixtures.WithRequests("cpu", "3")))
	if got := f.cluster.DaemonSetPods(); len(got) != 1 || got[0].Name != "agent-old" {
		t.Fatalf("example %v, want agent-old", names(got))
	}

	f.cluster.DeleteDaemonSet(client.ObjectKeyFromObject(ds))
	if got := f.cluster.DaemonSetPods(); len(got) != 0 {
		t.Fatalf("a deleted DaemonSet contributes %v", names(got))
	}
	// Created again (a new uid), its old pods do not stand for it.
	again := ds.DeepCopy()
	again.UID = "recreated"
	f.cluster.UpdateDaemonSet(again)
	f.cluster.UpdatePod(older)
	if got := f.cluster.DaemonSetPods(); len(got) != 1 || got[0].Name != "agent" {
		t.Fatalf("recreated DaemonSet: %v, want its template", names(got))
	}
}
