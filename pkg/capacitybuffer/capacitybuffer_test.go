package capacitybuffer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
)

func i32(v int32) *int32 { return &v }

func chunk(cpu, mem string) *corev1.PodSpec {
	return &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}
}

func TestReplicasFollowCapacityBufferSemantics(t *testing.T) {
	limits := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		scalable *int32
		want     int32
	}{
		{"replicas alone", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3)}, nil, 3},
		{"percentage of the workload, rounded up", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(20)}, i32(11), 3},
		{"percentage gives at least one chunk", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(1)}, i32(5), 1},
		{"percentage without a workload counts nothing", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(50)}, nil, 0},
		{"the larger of replicas and percentage", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(2), Percentage: i32(50)}, i32(10), 5},
		{"the larger of replicas and percentage (replicas)", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(7), Percentage: i32(50)}, i32(10), 7},
		{"limits cap replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(10), Limits: limits("cpu", "4")}, nil, 4},
		{"limits alone size the buffer", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "5")}, nil, 5},
		{"the tightest limit wins", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "5", "memory", "1Gi")}, nil, 2},
		{"limits on resources the chunk does not request cap nothing", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("nvidia.com/gpu", "1")}, nil, 3},
		{"limits below one chunk give none", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("cpu", "500m")}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := capacitybuffer.Replicas(tc.spec, chunk("1", "512Mi"), tc.scalable); got != tc.want {
				t.Errorf("Replicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func buffer(name string, replicas int32) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 4},
		Status: autoscalingv1beta1.CapacityBufferStatus{Replicas: &replicas, Conditions: []metav1.Condition{{
			Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: capacitybuffer.ReasonResolved}}},
	}
}

func TestVirtualPodsStandForTheChunks(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{
			NodeName:          "somewhere",
			PriorityClassName: "high",
			Containers:        []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "config"}}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
		},
	}
	b := buffer("web", 3)
	pods := capacitybuffer.VirtualPods(b, tmpl, 3)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	again := capacitybuffer.VirtualPods(b, tmpl, 3)
	for i, p := range pods {
		if !capacitybuffer.IsVirtual(p) {
			t.Errorf("pod %d is not marked virtual: %v", i, p.Annotations)
		}
		if key, ok := capacitybuffer.Of(p); !ok || key != (types.NamespacedName{Namespace: "ns", Name: "web"}) {
			t.Errorf("pod %d belongs to %v %t, want ns/web", i, key, ok)
		}
		if p.UID != again[i].UID || p.Name != again[i].Name {
			t.Errorf("pod %d: %s/%s then %s/%s: names and UIDs must be stable", i, p.Name, p.UID, again[i].Name, again[i].UID)
		}
		if p.Labels["app"] != "web" {
			t.Errorf("pod %d labels %v, want the template's", i, p.Labels)
		}
		if _, ok := p.Annotations["karpenter.sh/do-not-disrupt"]; ok {
			t.Errorf("pod %d carries the template's annotations: %v", i, p.Annotations)
		}
		if p.Spec.NodeName != "" || p.Spec.PriorityClassName != "" || p.Spec.Priority == nil || *p.Spec.Priority != autoscalingv1beta1.VirtualPodPriority {
			t.Errorf("pod %d spec: nodeName %q, priorityClassName %q, priority %v", i, p.Spec.NodeName, p.Spec.PriorityClassName, p.Spec.Priority)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "config" || len(p.Spec.Containers[0].VolumeMounts) != 1 {
			t.Errorf("pod %d keeps volumes %v mounts %v, want the config map only", i, p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts)
		}
	}
	if pods[0].UID == pods[1].UID {
		t.Errorf("two chunks share UID %s", pods[0].UID)
	}
	if len(tmpl.Spec.Volumes) != 2 || tmpl.Spec.NodeName != "somewhere" {
		t.Errorf("the template was modified: %+v", tmpl.Spec)
	}
	if capacitybuffer.VirtualPods(b, tmpl, 0) != nil {
		t.Errorf("zero chunks gave pods")
	}
	real := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "real"}}
	if got := capacitybuffer.Real(append([]*corev1.Pod{real}, pods...)); len(got) != 1 || got[0] != real {
		t.Errorf("Real kept %d pods, want the real one", len(got))
	}
}

func TestProvisioningCondition(t *testing.T) {
	notReady := buffer("b", 2)
	notReady.Status.Conditions[0].Status = metav1.ConditionFalse
	for _, tc := range []struct {
		name   string
		b      *autoscalingv1beta1.CapacityBuffer
		count  *capacitybuffer.Count
		status metav1.ConditionStatus
		reason string // "" for no condition
	}{
		{"not ready", notReady, &capacitybuffer.Count{Existing: 2}, metav1.ConditionFalse, capacitybuffer.ReasonNotReadyForProvisioning},
		{"empty", buffer("b", 0), nil, metav1.ConditionFalse, capacitybuffer.ReasonBufferEmpty},
		{"all on existing capacity", buffer("b", 2), &capacitybuffer.Count{Existing: 2}, metav1.ConditionTrue, capacitybuffer.ReasonFitsExistingCapacity},
		{"one needs a launch", buffer("b", 2), &capacitybuffer.Count{Existing: 1, New: 1}, metav1.ConditionFalse, capacitybuffer.ReasonRequiresNewCapacity},
		{"one found no place", buffer("b", 2), &capacitybuffer.Count{Existing: 1, Failed: 1}, metav1.ConditionFalse, capacitybuffer.ReasonRequiresNewCapacity},
		{"not seen by the decision", buffer("b", 2), nil, "", ""},
		{"seen in part", buffer("b", 2), &capacitybuffer.Count{Existing: 1}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capacitybuffer.ProvisioningCondition(tc.b, tc.count)
			if tc.reason == "" {
				if c != nil {
					t.Fatalf("condition %+v, want none", c)
				}
				return
			}
			if c == nil || c.Type != autoscalingv1beta1.ConditionProvisioning || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 4 {
				t.Fatalf("condition %+v, want Provisioning %s %s at generation 4", c, tc.status, tc.reason)
			}
		})
	}
}

func TestTallyCountsEachBuffersPods(t *testing.T) {
	a := capacitybuffer.VirtualPods(buffer("a", 3), corev1.PodTemplateSpec{}, 3)
	b := capacitybuffer.VirtualPods(buffer("b", 1), corev1.PodTemplateSpec{}, 1)
	real := &corev1.Pod{}
	got := capacitybuffer.Tally([]*corev1.Pod{a[0], real, b[0]}, []*corev1.Pod{a[1]}, []*corev1.Pod{a[2], real})
	if c := got[types.NamespacedName{Namespace: "ns", Name: "a"}]; c == nil || *c != (capacitybuffer.Count{Existing: 1, New: 1, Failed: 1}) {
		t.Errorf("a: %+v", c)
	}
	if c := got[types.NamespacedName{Namespace: "ns", Name: "b"}]; c == nil || *c != (capacitybuffer.Count{Existing: 1}) {
		t.Errorf("b: %+v", c)
	}
	if len(got) != 2 {
		t.Errorf("%d buffers counted, want 2: real pods count for none", len(got))
	}
}
