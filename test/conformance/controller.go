package conformance

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/controllernode"
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
	return controllernode.WaitLeading(ctx, c, ControllerNamespace, LeaseName, timeout)
}
