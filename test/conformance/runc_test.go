package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/controllernode"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
	"github.com/karpenter-go/karpenter/test/conformance"
)

// The controller image (make image) runs as the chart's controller pod under
// an OCI runtime: the harness, as the kubelet of the tainted control node,
// unpacks the host platform's image into a runc bundle and runs it with what
// the chart renders for the pod (env, user 65532, read-only root filesystem,
// no capabilities, the ServiceAccount token projected where in-cluster
// clients read it, the host's network). The controller in the image leads,
// answers its probes, launches a KWOK node for a pending pod and retires the
// node once the pod is gone.
func TestControllerImageRunsUnderRunc(t *testing.T) {
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("%s (%v)", controllernode.RuncMissing, err)
	}
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	img, err := imagebuild.Cached(imagebuild.Options{Root: root, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s (linux/%s %s) ready in %s", img.Index, imagebuild.HostArch(), img.Images[imagebuild.HostArch()], time.Since(start).Round(time.Millisecond))

	ctx := context.Background()
	c := localcluster.Start(t)
	if err := kit.InstallCRDs(ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	node := &controllernode.Node{
		Name: "karpenter-control-plane", Client: c.Client, KubeClient: c.KubeClient, AdminKubeconfig: c.Kubeconfig,
		Image: img.Layout, Dir: filepath.Join(c.StateDir, "controller-node"), Logf: t.Logf,
	}
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range node.Logs() {
				b, _ := os.ReadFile(f)
				t.Logf("%s (last 4 KiB):\n%s", f, tail(b, 4096))
			}
		}
	})
	if err := conformance.InstallController(ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	leader, err := conformance.WaitControllerLeading(ctx, c.Client, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller pod %s leads %s after the image was ready", leader, time.Since(start).Round(time.Millisecond))

	pod := &corev1.Pod{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: conformance.ControllerNamespace, Name: leader}, pod); err != nil {
		t.Fatal(err)
	}
	id, ports := node.PodContainer(pod.Namespace, pod.Name)
	if id == "" {
		t.Fatalf("pod %s is not a runc container of the node", leader)
	}
	if got := pod.Status.ContainerStatuses[0].ContainerID; got != "runc://"+id {
		t.Errorf("container ID %q, want runc://%s", got, id)
	}
	checkContainerProcess(t, node, id)

	// The probes the chart declares answer on the container's ports.
	ctr := pod.Spec.Containers[0]
	for kind, probe := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Fatalf("the chart's container has no HTTP %s probe", kind)
		}
		port := probe.HTTPGet.Port.IntVal
		for _, cp := range ctr.Ports {
			if probe.HTTPGet.Port.StrVal != "" && cp.Name == probe.HTTPGet.Port.StrVal {
				port = cp.ContainerPort
			}
		}
		local, ok := ports[port]
		if !ok {
			t.Fatalf("%s probe port %s (%d) is not a port of the container", kind, probe.HTTPGet.Port.String(), port)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d%s", local, probe.HTTPGet.Path)
		if err := pollHTTP(ctx, url); err != nil {
			t.Errorf("%s probe %s: %v", kind, url, err)
		}
	}

	// A pending pod gets a KWOK node; once it is gone, the node goes.
	nodeClass := kit.DefaultNodeClass(0)
	if err := c.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	pool := kit.DefaultNodePool("default", nodeClass.Name, 8)
	pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	if err := c.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	app := kit.Deployment("default", "inflate", 1, "1", "1Gi", false)
	if err := c.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	launched := ""
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": "inflate"}); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			n := &corev1.Node{}
			if err := c.Client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, n); err != nil {
				return false, nil
			}
			if n.Labels[v1.NodePoolLabelKey] == pool.Name {
				launched = n.Name
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no node of NodePool %s runs the pending pod: %v", pool.Name, err)
	}
	t.Logf("node %s launched for the pod", launched)
	if err := c.Client.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := c.Client.List(ctx, &nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, nil
		}
		var claims v1.NodeClaimList
		if err := c.Client.List(ctx, &claims); err != nil {
			return false, nil
		}
		return len(nodes.Items) == 0 && len(claims.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("node %s was not terminated after its pod went: %v", launched, err)
	}
	t.Logf("node %s terminated", launched)

	// A pod asking for an image the node does not hold (another digest)
	// does not start: its container waits with the kubelet's reason.
	other := pod.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Namespace: pod.Namespace, Name: "karpenter-other-image"}
	other.Spec.NodeName = node.Name
	other.Spec.Containers[0].Image = "ghcr.io/karpenter-go/karpenter/controller:" + img.Version + "@sha256:" + strings.Repeat("0", 64)
	other.Status = corev1.PodStatus{}
	if err := c.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	var waiting *corev1.ContainerStateWaiting
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil || len(other.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		waiting = other.Status.ContainerStatuses[0].State.Waiting
		return waiting != nil, nil
	})
	if err != nil || waiting.Reason != "ErrImageNeverPull" || !strings.Contains(waiting.Message, img.Index.String()) {
		t.Fatalf("a pod of another image: waiting %+v (%v), want ErrImageNeverPull naming the node's image %s", waiting, err, img.Index)
	}
	if id, _ := node.PodContainer(other.Namespace, other.Name); id != "" {
		t.Errorf("the node runs container %s for an image it does not hold", id)
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Millisecond))
}

// checkContainerProcess reads the container's process from the host: the
// image's entrypoint, user and group 65532, no capabilities, no new
// privileges, a read-only root and the projected ServiceAccount files.
func checkContainerProcess(t *testing.T, node *controllernode.Node, id string) {
	t.Helper()
	pid, err := node.ContainerPID(id)
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	if argv0 := strings.Split(string(cmdline), "\x00")[0]; argv0 != "/usr/local/bin/karpenter" {
		t.Errorf("container process runs %q, want the image's /usr/local/bin/karpenter", argv0)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	for k, want := range map[string]string{
		"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532",
		"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1",
	} {
		if fields[k] != want {
			t.Errorf("container process %s: %q, want %q", k, fields[k], want)
		}
	}
	mountinfo, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	rootRO, tokenMounted := false, false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		opts := "," + f[5] + ","
		switch f[4] {
		case "/":
			rootRO = strings.Contains(opts, ",ro,")
		case controllernode.ServiceAccountDir:
			tokenMounted = strings.Contains(opts, ",ro,")
		}
	}
	if !rootRO {
		t.Errorf("the container's root filesystem is not read-only")
	}
	if !tokenMounted {
		t.Errorf("%s is not mounted read-only in the container", controllernode.ServiceAccountDir)
	}
	for _, f := range []string{"token", "ca.crt", "namespace"} {
		if fi, err := os.Stat(fmt.Sprintf("/proc/%d/root%s/%s", pid, controllernode.ServiceAccountDir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s/%s in the container: %v", controllernode.ServiceAccountDir, f, err)
		}
	}
}

func pollHTTP(ctx context.Context, url string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%v (last: %s)", err, last)
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
