package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/controllernode"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// The controller is installed as users install it: both charts with
// `helm upgrade --install`, into kube-system. The kube-controller-manager
// creates the Deployment's pod and the scheduler binds it to the control node
// (tainted CriticalAddonsOnly, as a kind cluster's), whose kubelet
// (controllernode) runs the pod from the controller image under runc, or,
// where no OCI runtime can run here, the controller binary as a process with
// the same environment and ServiceAccount token.

const (
	chartNamespace = "kube-system"
	controlNode    = "karpenter-control-plane"
	leaseName      = "karpenter-leader-election"
)

// runtimeMode picks how the control node runs the controller's pod:
// "runc" when runc is installed and this process may create containers
// (root), "binary" otherwise; -runtime forces one.
func runtimeMode(flagValue string) (string, string) {
	switch flagValue {
	case "runc", "binary":
		return flagValue, "-runtime=" + flagValue
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "binary", "runc is not installed (Debian: apt-get install -y runc)"
	}
	if os.Geteuid() != 0 {
		return "binary", "runc needs root to create the container here"
	}
	return "runc", ""
}

// startController installs the charts and waits until the controller pod
// leads. values are the karpenter chart's; extraEnv is what the environment
// gives the pod outside its chart (see controllernode.Node.ExtraEnv).
func (d *demo) startController(ctx context.Context, provider, mode, why string, values, extraEnv []string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	d.node = &controllernode.Node{
		Name: controlNode, Client: d.client, KubeClient: kube, AdminKubeconfig: d.kubeconfig,
		Dir: filepath.Join(d.state, "controller-node"), ExtraEnv: extraEnv,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "    "+format+"\n", args...) },
	}
	if mode == "runc" {
		step("building the controller image from source (make image: linux/amd64 + linux/arm64 OCI index with SBOMs, bin/image/; cached by content)")
		start := time.Now()
		img, err := imagebuild.Cached(imagebuild.Options{Root: d.root, Logf: func(string, ...any) {}})
		if err != nil {
			return err
		}
		fmt.Printf("    image %s@%s (linux/%s %s), ready in %s\n", img.Version, img.Index, imagebuild.HostArch(), img.Images[imagebuild.HostArch()], time.Since(start).Round(100*time.Millisecond))
		d.node.Image = img.Layout
		values = append(values, "--set", "controller.image.digest="+img.Index.String())
	} else {
		step("building bin/karpenter: the control node runs the controller binary as the pod's process (" + why + "), with the container's environment, args and ServiceAccount token")
		bin := filepath.Join(d.root, "bin", "karpenter")
		if err := kit.Build(d.root, bin); err != nil {
			return err
		}
		d.node.Binary = bin
	}
	step(fmt.Sprintf("starting node %s (tainted CriticalAddonsOnly), whose kubelet runs the controller's pod %s", controlNode,
		map[string]string{"runc": "from the image under runc: user 65532, read-only root filesystem, no capabilities, the ServiceAccount token projected", "binary": "as a local process"}[mode]))
	if err := d.node.Start(ctx); err != nil {
		return err
	}
	kc := []string{"--kubeconfig", d.kubeconfig, "--namespace", chartNamespace}
	crdArgs := append([]string{"upgrade", "--install", "karpenter-crd", "charts/karpenter-crd"}, append(kc, "--set", "cloudProvider="+provider)...)
	step("helm " + strings.Join(withoutKubeconfig(crdArgs), " "))
	if _, err := d.helm(crdArgs...); err != nil {
		return err
	}
	if err := d.waitServed(ctx, provider); err != nil {
		return err
	}
	args := append(append([]string{"upgrade", "--install", "karpenter", "charts/karpenter"}, kc...), values...)
	step("helm " + strings.Join(withoutKubeconfig(args), " "))
	if len(extraEnv) > 0 {
		fmt.Println("    from outside the chart (what IRSA or Pod Identity and the VPC endpoint give a pod on EKS): AWS_ENDPOINT_URL, AWS_REGION and static credentials of the emulator")
	}
	if _, err := d.helm(args...); err != nil {
		return err
	}
	pod, err := controllernode.WaitLeading(ctx, d.client, chartNamespace, leaseName, 3*time.Minute)
	if err != nil {
		return err
	}
	d.pod = pod
	id, ports := d.node.PodContainer(chartNamespace, pod)
	if id != "" {
		fmt.Printf("    pod %s/%s leads: runc container %s\n", chartNamespace, pod, id)
	} else {
		fmt.Printf("    pod %s/%s leads\n", chartNamespace, pod)
	}
	p := &corev1.Pod{}
	if err := d.client.Get(ctx, client.ObjectKey{Namespace: chartNamespace, Name: pod}, p); err == nil {
		for _, cp := range p.Spec.Containers[0].Ports {
			if cp.Name == "http-metrics" {
				d.metricsPort = ports[cp.ContainerPort]
			}
		}
	}
	d.logPath = d.node.PodLog(chartNamespace, pod)
	fmt.Println("    log: " + rel(d.root, d.logPath))
	return nil
}

// helm runs the real helm CLI; charts/... are this repository's charts.
func (d *demo) helm(args ...string) (string, error) {
	abs := make([]string, len(args))
	for i, a := range args {
		abs[i] = a
		if strings.HasPrefix(a, "charts/") {
			abs[i] = filepath.Join(d.root, a)
		}
	}
	return helm.Run(abs...)
}

// withoutKubeconfig is the command line as a user types it (their
// kubeconfig is the current context).
func withoutKubeconfig(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--kubeconfig" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// waitServed waits until the API server serves the kinds of the CRD chart
// (their CRDs Established), so that the objects the demo creates next are
// accepted.
func (d *demo) waitServed(ctx context.Context, provider string) error {
	kinds := []client.ObjectList{&v1.NodePoolList{}, &v1.NodeClaimList{}, &kwokv1alpha1.KWOKNodeClassList{}}
	if provider == "aws" {
		kinds[2] = &awsv1.EC2NodeClassList{}
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, l := range kinds {
			if last = d.client.List(ctx, l, client.Limit(1)); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the CRD chart's kinds are not served after a minute: %v (%w)", last, err)
	}
	return nil
}
