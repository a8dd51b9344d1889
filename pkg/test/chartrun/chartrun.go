// Package chartrun runs the controller as the karpenter chart's Deployment
// would run it, on a cluster without a kubelet for it: the chart is rendered
// with the real helm CLI, its objects (ServiceAccount, RBAC) are applied, and
// the controller binary is started as one pod of the rendered Deployment:
// the container's environment resolved as a kubelet resolves it (literal
// values, the Downward API's pod name and namespace, the container's
// resources), its args, and a token of the chart's ServiceAccount, so that
// exactly the chart's RBAC applies. The demo (`make run`), the end-to-end
// chart tests and the conformance harness's controller node share it.
package chartrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// Install renders charts/karpenter as release in namespace with helm's
// arguments (--set, -f ...), creates the namespace and server-side applies
// every rendered object except the Deployment, whose pods nothing would run,
// and the PodDisruptionBudget and Service in front of them. It returns the
// rendered Deployment.
func Install(ctx context.Context, c client.Client, release, namespace string, args ...string) (*appsv1.Deployment, error) {
	objs, err := helm.Template("karpenter", release, namespace, args...)
	if err != nil {
		return nil, err
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})); err != nil {
		return nil, err
	}
	var deploy *appsv1.Deployment
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			if deploy, err = Deployment(o); err != nil {
				return nil, err
			}
			continue
		case "PodDisruptionBudget", "Service":
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	if deploy == nil {
		return nil, fmt.Errorf("the chart rendered no Deployment")
	}
	return deploy, nil
}

// Deployment converts a rendered Deployment to its type.
func Deployment(u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("the rendered Deployment %s: %w", u.GetName(), err)
	}
	return d, nil
}

// Pod is the pod named name that a ReplicaSet of d creates.
func Pod(d *appsv1.Deployment, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
}

// ServiceAccount is the pod's ServiceAccount ("default" when it names none).
func ServiceAccount(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName == "" {
		return "default"
	}
	return pod.Spec.ServiceAccountName
}

// ContainerEnv resolves the container's environment the way a kubelet would
// for the parts the controller reads: literal values, the pod's name,
// namespace, node and addresses (from pod.Status), and its resource requests
// and limits (a limit or request the container does not set is left out:
// the controller's default applies, where a kubelet would give the node's
// allocatable). The port variables (METRICS_PORT, HEALTH_PROBE_PORT) are
// returned apart with the chart's ports: each process on a host gets free
// ports of its own. WEBHOOK_PORT and KUBECONFIG are left out for the same
// reason.
func ContainerEnv(pod *corev1.Pod, ctr corev1.Container) ([]string, map[string]int32) {
	var env []string
	ports := map[string]int32{"METRICS_PORT": 8080, "HEALTH_PROBE_PORT": 8081}
	for _, ev := range ctr.Env {
		value := ev.Value
		if src := ev.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil:
				switch src.FieldRef.FieldPath {
				case "metadata.name":
					value = pod.Name
				case "metadata.namespace":
					value = pod.Namespace
				case "spec.nodeName":
					value = pod.Spec.NodeName
				case "spec.serviceAccountName":
					value = ServiceAccount(pod)
				case "status.podIP":
					value = pod.Status.PodIP
				case "status.hostIP":
					value = pod.Status.HostIP
				default:
					continue
				}
			case src.ResourceFieldRef != nil:
				v, ok := resourceValue(ctr, src.ResourceFieldRef)
				if !ok {
					continue
				}
				value = v
			default:
				continue
			}
		}
		if _, isPort := ports[ev.Name]; isPort {
			if v, err := strconv.Atoi(value); err == nil {
				ports[ev.Name] = int32(v)
			}
			continue
		}
		if ev.Name == "WEBHOOK_PORT" || ev.Name == "KUBECONFIG" {
			continue
		}
		env = append(env, ev.Name+"="+value)
	}
	return env, ports
}

// resourceValue is a resourceFieldRef's value: the request or limit divided
// by the divisor, rounded up, as the kubelet computes it.
func resourceValue(ctr corev1.Container, ref *corev1.ResourceFieldSelector) (string, bool) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", false
	}
	list := ctr.Resources.Limits
	if kind == "requests" {
		list = ctr.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "", false
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	return strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10), true
}

// Start runs binary as the pod podName of d: with a kubeconfig holding a
// token of the pod's ServiceAccount (written into dir), the first
// container's resolved environment and args, free local metrics and health
// ports, the leader Lease in the pod's namespace (the controller's default
// in a pod), and extraEnv last (what the environment provides outside the
// chart, e.g. an AWS endpoint and credentials). The log goes to
// dir/podName.log.
func Start(ctx context.Context, c client.Client, adminKubeconfig, dir, binary string, d *appsv1.Deployment, podName string, extraEnv ...string) (*kit.Process, error) {
	pod := Pod(d, podName)
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no container", d.Name)
	}
	ctr := pod.Spec.Containers[0]
	if len(ctr.Command) > 0 {
		return nil, fmt.Errorf("Deployment %s overrides the image's entrypoint (%v): not the controller binary", d.Name, ctr.Command)
	}
	kubeconfig := filepath.Join(dir, podName+".kubeconfig")
	if err := kit.ServiceAccountKubeconfig(ctx, c, adminKubeconfig, pod.Namespace, ServiceAccount(pod), kubeconfig); err != nil {
		return nil, err
	}
	metrics, err := kit.FreePort()
	if err != nil {
		return nil, err
	}
	health, err := kit.FreePort()
	if err != nil {
		return nil, err
	}
	env, _ := ContainerEnv(pod, ctr)
	cmd := exec.Command(binary, ctr.Args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"METRICS_PORT="+strconv.Itoa(metrics),
		"HEALTH_PROBE_PORT="+strconv.Itoa(health),
		"LEADER_ELECTION_NAMESPACE="+pod.Namespace,
	)
	cmd.Env = append(append(cmd.Env, env...), extraEnv...)
	return kit.StartCommand(cmd, filepath.Join(dir, podName+".log"), metrics, health)
}
