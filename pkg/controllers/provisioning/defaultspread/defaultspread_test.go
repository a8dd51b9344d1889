package defaultspread_test

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning/defaultspread"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// defaults are a cluster's kube-scheduler defaultConstraints.
var defaults = []corev1.TopologySpreadConstraint{
	{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule},
}

// setup creates a namespace of the test's own, so that no other test's
// Services or controllers are seen.
func setup(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "defaultspread-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ctx, ns.Name
}

// pod is a pod of namespace ns.
func pod(ns, name string, opts ...fixtures.PodOption) *corev1.Pod {
	p := fixtures.Pod(name, opts...)
	p.Namespace = ns
	return p
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fixtures.DefaultImage}}},
	}
}

func service(ns, name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
}

// controlledBy is a controller owner reference to o, of kind gvk.
func controlledBy(apiVersion, kind string, o client.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(true)}
}

// expectDefaults checks that p carries the defaults, in order, each with selector.
func expectDefaults(t *testing.T, p *corev1.Pod, selector *metav1.LabelSelector) {
	t.Helper()
	got := p.Spec.TopologySpreadConstraints
	if len(got) != len(defaults) {
		t.Fatalf("pod %s: constraints %+v, want the %d defaults", p.Name, got, len(defaults))
	}
	for i := range defaults {
		want := *defaults[i].DeepCopy()
		want.LabelSelector = selector
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("pod %s: constraint %d\n got %+v\nwant %+v", p.Name, i, got[i], want)
		}
	}
}

// A ReplicaSet's pod gets the defaults with the selector kube-scheduler
// deduces: the labels of the Services selecting it, and its ReplicaSet's
// selector as requirements. The pod given is not modified.
func TestReplicaSetPodGetsTheDefaults(t *testing.T) {
	ctx, ns := setup(t)
	rsLabels := map[string]string{"app": "web", "pod-template-hash": "abc"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: ns},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: template(rsLabels)},
	}
	ExpectApplied(ctx, t, e.Client, rs, service(ns, "web", map[string]string{"app": "web"}), service(ns, "other", map[string]string{"app": "other"}))
	webPod := pod(ns, "web-abc-1", fixtures.WithLabels(map[string]string{"app": "web", "pod-template-hash": "abc", "extra": "x"}),
		fixtures.WithOwners(controlledBy("apps/v1", "ReplicaSet", rs)))
	pods := []*corev1.Pod{webPod}

	out := defaultspread.New(e.Client, defaults).Apply(ctx, pods)
	expectDefaults(t, out[0], &metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}},
			{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{"abc"}},
		},
	})
	if pods[0] != webPod || len(webPod.Spec.TopologySpreadConstraints) != 0 {
		t.Fatalf("the pod given was modified: %+v", webPod.Spec.TopologySpreadConstraints)
	}
	if out[0].UID != webPod.UID || out[0].Name != webPod.Name || !reflect.DeepEqual(out[0].Spec.Containers, webPod.Spec.Containers) {
		t.Fatal("the copy is not the same pod")
	}
}

// A ReplicationController's selector merges into the Services' labels; a
// StatefulSet's adds requirements, expressions included.
func TestReplicationControllerAndStatefulSetSelectors(t *testing.T) {
	ctx, ns := setup(t)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns},
		Spec:       corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "legacy", "tier": "be"}, Template: ptr.To(template(map[string]string{"app": "legacy", "tier": "be"}))},
	}
	dbSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "db-replica"}}}}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec:       appsv1.StatefulSetSpec{Selector: dbSelector, Template: template(map[string]string{"app": "db"})},
	}
	ExpectApplied(ctx, t, e.Client, rc, sts, service(ns, "legacy", map[string]string{"app": "legacy"}))
	legacy := pod(ns, "legacy-1", fixtures.WithLabels(map[string]string{"app": "legacy", "tier": "be"}), fixtures.WithOwners(controlledBy("v1", "ReplicationController", rc)))
	db := pod(ns, "db-0", fixtures.WithLabels(map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": "db-0"}), fixtures.WithOwners(controlledBy("apps/v1", "StatefulSet", sts)))

	out := defaultspread.New(e.Client, defaults).Apply(ctx, []*corev1.Pod{legacy, db})
	expectDefaults(t, out[0], &metav1.LabelSelector{MatchLabels: map[string]string{"app": "legacy", "tier": "be"}})
	expectDefaults(t, out[1], &metav1.LabelSelector{MatchExpressions: dbSelector.MatchExpressions})
}

// A pod with a constraint of its own keeps exactly its own; a pod for which
// nothing can be deduced (bare, or a Job's, selected by no Service; a Service
// without a selector selects nothing) gets none. Nothing changed: the same
// slice comes back.
func TestPodsKeepTheirOwnOrGetNone(t *testing.T) {
	ctx, ns := setup(t)
	rsLabels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: template(rsLabels)},
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: ns},
		Spec:       batchv1.JobSpec{Template: template(map[string]string{"job": "batch"})},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	ExpectApplied(ctx, t, e.Client, rs, job, service(ns, "external", nil))
	own := corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: rsLabels}}
	withOwn := pod(ns, "web-1", fixtures.WithLabels(rsLabels), fixtures.WithOwners(controlledBy("apps/v1", "ReplicaSet", rs)), fixtures.WithTopologySpread(own))
	bare := pod(ns, "bare", fixtures.WithLabels(map[string]string{"app": "bare"}))
	jobPod := pod(ns, "batch-1", fixtures.WithLabels(map[string]string{"job": "batch"}), fixtures.WithOwners(controlledBy("batch/v1", "Job", job)))
	pods := []*corev1.Pod{withOwn, bare, jobPod}

	out := defaultspread.New(e.Client, defaults).Apply(ctx, pods)
	if &out[0] != &pods[0] || out[0] != withOwn || out[1] != bare || out[2] != jobPod {
		t.Fatal("pods that get no defaults were replaced")
	}
	if got := withOwn.Spec.TopologySpreadConstraints; len(got) != 1 || !reflect.DeepEqual(got[0], own) {
		t.Fatalf("the pod's own constraints changed: %+v", got)
	}
	if len(bare.Spec.TopologySpreadConstraints)+len(jobPod.Spec.TopologySpreadConstraints) != 0 {
		t.Fatal("a pod without a deducible selector got constraints")
	}
}

// Without defaults nothing is looked up or changed.
func TestNoDefaultsChangeNothing(t *testing.T) {
	ctx, ns := setup(t)
	ExpectApplied(ctx, t, e.Client, service(ns, "web", map[string]string{"app": "web"}))
	pods := []*corev1.Pod{pod(ns, "web-1", fixtures.WithLabels(map[string]string{"app": "web"}))}
	a := defaultspread.New(e.Client, nil)
	if a != nil {
		t.Fatal("an applier without constraints")
	}
	if out := a.Apply(ctx, pods); &out[0] != &pods[0] || len(out[0].Spec.TopologySpreadConstraints) != 0 {
		t.Fatal("pods changed without defaults")
	}
}

// The pods bound to nodes get the defaults in a new slice per node: the one
// the node had is left as it was.
func TestApplyToNodesLeavesTheNodesSlices(t *testing.T) {
	ctx, ns := setup(t)
	ExpectApplied(ctx, t, e.Client, service(ns, "web", map[string]string{"app": "web"}))
	bound := pod(ns, "web-1", fixtures.WithLabels(map[string]string{"app": "web"}), fixtures.OnNode("node-a"))
	other := pod(ns, "bare", fixtures.OnNode("node-b"))
	stateA, stateB := []*corev1.Pod{bound}, []*corev1.Pod{other}
	nodes := []*scheduling.ExistingNode{{Name: "node-a", Pods: stateA}, {Name: "node-b", Pods: stateB}}

	defaultspread.New(e.Client, defaults).ApplyToNodes(ctx, nodes)
	expectDefaults(t, nodes[0].Pods[0], &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	if stateA[0] != bound || len(bound.Spec.TopologySpreadConstraints) != 0 {
		t.Fatal("the node's own slice or pod was written")
	}
	if nodes[1].Pods[0] != other {
		t.Fatal("a pod without a deducible selector was replaced")
	}
}
