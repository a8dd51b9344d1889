package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Effective limits: app containers and sidecars add up, an init container
// counts with the sidecars before it and the larger wins, and overhead is added
// only to resources that have a limit.
func TestPodLimitsFollowKubernetesRules(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	lim := func(kv ...string) corev1.ResourceRequirements {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return corev1.ResourceRequirements{Limits: l}
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Resources: lim("cpu", "1", "memory", "1Gi")}},
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: lim("cpu", "500m")},
			{Name: "init", Resources: lim("cpu", "2")},
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
	}}
	got := podLimits(p)
	if cpu := got[corev1.ResourceCPU]; cpu.MilliValue() != 2600 {
		t.Errorf("cpu limit %v, want 2600m (init 2 + sidecar 500m beats app 1 + sidecar 500m; + 100m overhead)", cpu.String())
	}
	if mem := got[corev1.ResourceMemory]; mem.Value() != 1<<30 {
		t.Errorf("memory limit %v, want 1Gi", mem.String())
	}
	if es, ok := got[corev1.ResourceEphemeralStorage]; ok {
		t.Errorf("ephemeral-storage has no container limit but got %v from overhead", es.String())
	}
}

// resource_type values are upstream's: lower case, "-" turned into "_".
func TestResourceTypeIsSnakeCase(t *testing.T) {
	for in, want := range map[corev1.ResourceName]string{"cpu": "cpu", "ephemeral-storage": "ephemeral_storage", "nvidia.com/gpu": "nvidia.com/gpu"} {
		if got := resourceType(in); got != want {
			t.Errorf("resourceType(%q) = %q, want %q", in, got, want)
		}
	}
}
