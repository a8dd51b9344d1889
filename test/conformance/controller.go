package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/helm"
)

// ChartValues install our chart the way upstream's KWOK end-to-end workflow
// installs its own (Makefile HELM_OPTS: debug logs, 1-2 CPU and 1-2 GiB, node
// repair, capacity buffers and static capacity on), as release "karpenter" in kube-system, where the suites look
// for the controller (Deployment kube-system/karpenter, pods labelled
// app.kubernetes.io/instance=karpenter, Lease karpenter-leader-election).
// Two departures, both of the environment: one replica (the cluster has one
// system node, and the chart's replicas keep to separate hosts) and no zone
// spread (that node, like kind's, has no zone).
var ChartValues = []string{
	"--set", "cloudProvider=kwok",
	"--set", "replicas=1",
	"--set", "logLevel=debug",
	"--set", "controller.resources.requests.cpu=1",
	"--set", "controller.resources.requests.memory=1Gi",
	"--set", "controller.resources.limits.cpu=2",
	"--set", "controller.resources.limits.memory=2Gi",
	"--set", "settings.featureGates.nodeRepair=true",
	"--set", "settings.featureGates.staticCapacity=true",
	"--set", "settings.featureGates.capacityBuffer=true",
	"--set-json", "topologySpreadConstraints=[]",
	"--set-string", "controller.env[0].name=ENABLE_PROFILING",
	"--set-string", "controller.env[0].value=true",
}

// ControllerNamespace and ControllerRelease are where the suites expect the controller.
const (
	ControllerNamespace = "kube-system"
	ControllerRelease   = "karpenter"
	LeaseName           = "karpenter-leader-election"
)

// InstallController renders our chart (charts/karpenter, with the real helm
// CLI) and server-side applies every object it renders, the Deployment
// included: the scheduler binds its pod to the controller node, whose kubelet
// (ControllerNode) runs it.
func InstallController(ctx context.Context, c client.Client, extra ...string) error {
	objs, err := helm.Template("karpenter", ControllerRelease, ControllerNamespace, append(append([]string{}, ChartValues...), extra...)...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// WaitControllerLeading waits until a Running, Ready pod of the release holds
// the leader Lease, and returns its name.
func WaitControllerLeading(ctx context.Context, c client.Client, timeout time.Duration) (string, error) {
	var last string
	var leader string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ControllerNamespace, Name: LeaseName}, lease); err != nil {
			last = err.Error()
			return false, nil
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		}
		pod := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ControllerNamespace, Name: holder}, pod); err != nil {
			last = fmt.Sprintf("lease held by %q: %v", holder, err)
			return false, nil
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				leader = holder
				return true, nil
			}
		}
		last = fmt.Sprintf("lease held by %s, not Ready", holder)
		return false, nil
	})
	if err != nil {
		var pods corev1.PodList
		_ = c.List(ctx, &pods, client.InNamespace(ControllerNamespace))
		var states []string
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s node=%q phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		return "", fmt.Errorf("no controller pod leads after %s (%s; pods: %s)", timeout, last, strings.Join(states, ", "))
	}
	return leader, nil
}
