package chartrun_test

import (
	"slices"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/test/chartrun"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
)

// The chart's Deployment, rendered by helm, resolves as a kubelet would start
// its pod: the Downward API's name and namespace, the requests in millicores
// and the memory limit in bytes, the settings as literals; the ports apart.
func TestContainerEnvOfTheRenderedDeployment(t *testing.T) {
	objs, err := helm.Template("karpenter", "karpenter", "kube-system",
		"--set", "settings.clusterName=dev", "--set", "settings.interruptionQueue=dev",
		"--set", "controller.resources.requests.cpu=500m", "--set", "controller.resources.limits.memory=1Gi",
		"--set", "controller.metrics.port=9090")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d, err := chartrun.Deployment(o)
		if err != nil {
			t.Fatal(err)
		}
		pod := chartrun.Pod(d, "karpenter-7f9c-abcde")
		env, ports := chartrun.ContainerEnv(pod, pod.Spec.Containers[0])
		for _, want := range []string{
			"POD_NAME=karpenter-7f9c-abcde", "SYSTEM_NAMESPACE=kube-system", "CPU_REQUESTS=500",
			"MEMORY_LIMIT=1073741824", "CLUSTER_NAME=dev", "INTERRUPTION_QUEUE=dev", "CLOUD_PROVIDER=aws",
		} {
			if !slices.Contains(env, want) {
				t.Errorf("env lacks %s: %v", want, env)
			}
		}
		if ports["METRICS_PORT"] != 9090 || ports["HEALTH_PROBE_PORT"] != 8081 {
			t.Errorf("ports %v, want metrics 9090 and health 8081", ports)
		}
		if chartrun.ServiceAccount(pod) != "karpenter" {
			t.Errorf("ServiceAccount %q", chartrun.ServiceAccount(pod))
		}
		return
	}
	t.Fatal("no Deployment rendered")
}
