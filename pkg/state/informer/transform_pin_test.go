package informer_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

func decode[T any](t *testing.T, file string) *T {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// fullPod is the recorded pod with every field Karpenter reads set as well.
func fullPod(t *testing.T) *corev1.Pod {
	p := decode[corev1.Pod](t, "pod.json")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.Finalizers = []string{"example.com/keep"}
	p.Annotations[v1.DoNotDisruptAnnotationKey] = "true"
	p.Annotations[corev1.MirrorPodAnnotationKey] = "x"
	p.Annotations[informer.LastAppliedAnnotation] = "{}"
	prio := int32(1000)
	p.Spec.Priority = &prio
	p.Spec.PriorityClassName = "high"
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}}}}}}}}
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
		RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Resources:     corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP})
	p.Spec.Volumes = append(p.Spec.Volumes,
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	p.Status.NominatedNodeName = "node-000001"
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	return p
}

func ptr[T any](v T) *T { return &v }

// TestTransformPodPinned: exactly these fields leave a pod; everything else is kept, equal.
func TestTransformPodPinned(t *testing.T) {
	p := fullPod(t)
	want := p.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, informer.LastAppliedAnnotation)
	for _, cs := range []*[]corev1.Container{&want.Spec.InitContainers, &want.Spec.Containers} {
		for i := range *cs {
			c := &(*cs)[i]
			c.Env, c.EnvFrom, c.Command, c.Args, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
			c.WorkingDir, c.TerminationMessagePath = "", ""
		}
	}
	want.Spec.Volumes = want.Spec.Volumes[1:] // the service-account token goes, the claims stay
	want.Status.ContainerStatuses = nil
	want.Status.PodIP, want.Status.PodIPs, want.Status.HostIP, want.Status.HostIPs = "", nil, "", nil
	var conds []corev1.PodCondition
	for _, c := range want.Status.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady || c.Type == corev1.DisruptionTarget {
			conds = append(conds, c)
		}
	}
	want.Status.Conditions = conds

	got, err := informer.Transform(p)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("transformed pod differs from the expected one (- got + want):\n%s", diff.Diff(got, want))
	}
	if len(want.Status.Conditions) != 3 || len(want.Spec.Volumes) != 2 || want.Annotations[v1.DoNotDisruptAnnotationKey] != "true" {
		t.Fatalf("the expected pod lost what Karpenter reads: %d conditions, %d volumes", len(want.Status.Conditions), len(want.Spec.Volumes))
	}
}

// TestTransformNodePinned and TestTransformNodeClaimPinned: a Node loses only managedFields
// and its images, a NodeClaim only managedFields (Karpenter writes both back from the cache).
func TestTransformNodePinned(t *testing.T) {
	n := decode[corev1.Node](t, "node.json")
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/t", Effect: corev1.TaintEffectNoSchedule}}
	want := n.DeepCopy()
	want.ManagedFields, want.Status.Images = nil, nil
	if _, err := informer.Transform(n); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(n, want) {
		t.Errorf("transformed node differs (- got + want):\n%s", diff.Diff(n, want))
	}
}

func TestTransformNodeClaimPinned(t *testing.T) {
	nc := decode[v1.NodeClaim](t, "nodeclaim.json")
	nc.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/s", Effect: corev1.TaintEffectNoSchedule}}
	want := nc.DeepCopy()
	want.ManagedFields = nil
	if _, err := informer.Transform(nc); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(nc, want) {
		t.Errorf("transformed NodeClaim differs (- got + want):\n%s", diff.Diff(nc, want))
	}
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestTransformShares: two pods decoded apart share what is equal after the transform, and
// only that; a node's labels share their strings (the hostname the node's own name).
func TestTransformShares(t *testing.T) {
	a, b := decode[corev1.Pod](t, "pod.json"), decode[corev1.Pod](t, "pod.json")
	b.Name = "other"
	b.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := informer.Transform(p); err != nil {
			t.Fatal(err)
		}
	}
	for what, shared := range map[string]bool{
		"labels":       sameMap(a.Labels, b.Labels),
		"annotations":  sameMap(a.Annotations, b.Annotations),
		"owners":       &a.OwnerReferences[0] == &b.OwnerReferences[0],
		"tolerations":  &a.Spec.Tolerations[0] == &b.Spec.Tolerations[0],
		"spread":       &a.Spec.TopologySpreadConstraints[0] == &b.Spec.TopologySpreadConstraints[0],
		"limits":       sameMap(a.Spec.Containers[0].Resources.Limits, b.Spec.Containers[0].Resources.Limits),
		"namespace":    sameString(a.Namespace, b.Namespace),
		"node name":    sameString(a.Spec.NodeName, b.Spec.NodeName),
		"condition":    sameString(a.Status.Conditions[0].Reason+string(a.Status.Conditions[0].Type), a.Status.Conditions[0].Reason+string(a.Status.Conditions[0].Type)) && sameString(string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)),
		"label string": sameString(a.Labels["app"], b.Labels["app"]),
	} {
		if !shared {
			t.Errorf("%s not shared", what)
		}
	}
	// Different requests: different containers and requests, each with its own value.
	if &a.Spec.Containers[0] == &b.Spec.Containers[0] || sameMap(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests) {
		t.Fatal("pods with different requests share their containers")
	}
	if a.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 500 || b.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 2000 {
		t.Fatalf("requests %v and %v, want 500m and 2", a.Spec.Containers[0].Resources.Requests.Cpu(), b.Spec.Containers[0].Resources.Requests.Cpu())
	}
	if a.Name == b.Name {
		t.Fatal("names merged")
	}

	n := decode[corev1.Node](t, "node.json")
	if _, err := informer.Transform(n); err != nil {
		t.Fatal(err)
	}
	if !sameString(n.Labels[corev1.LabelHostname], n.Name) {
		t.Error("the hostname label does not share the node's name")
	}
	m := decode[corev1.Node](t, "node.json")
	m.Name = "node-000001"
	m.Labels[corev1.LabelHostname] = m.Name
	if _, err := informer.Transform(m); err != nil {
		t.Fatal(err)
	}
	if !sameString(n.Labels[corev1.LabelArchStable], m.Labels[corev1.LabelArchStable]) || !sameMap(n.Status.Allocatable, m.Status.Allocatable) {
		t.Error("nodes of one type do not share label values or allocatable")
	}
	if n.Labels[corev1.LabelHostname] == m.Labels[corev1.LabelHostname] {
		t.Error("hostname labels merged")
	}
}

// BenchmarkTransformPod: the CPU the transform adds per pod event (slimming, interning and
// the content keys of the shared parts), the decoding excluded.
func BenchmarkTransformPod(b *testing.B) {
	raw, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	pods := make([]*corev1.Pod, batch)
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			for j := range pods {
				pods[j] = p.DeepCopy()
			}
			b.StartTimer()
		}
		if _, err := informer.Transform(pods[i%batch]); err != nil {
			b.Fatal(err)
		}
	}
}
