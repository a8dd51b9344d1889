// Package kit is what the demo (`make run`) and the provisioning end-to-end tests
// share: start the local cluster, install the CRDs, build and run the Karpenter
// binary as a child process, create the default KWOKNodeClass and NodePool, and
// count what the cluster holds (pending pods, NodeClaims by state, nodes by
// instance type and zone, hourly cost).
package kit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// InstallCRDs creates (or updates) every CRD of pkg/apis/crds and waits until the
// API server serves them.
func InstallCRDs(ctx context.Context, c client.Client) error {
	return InstallCRDList(ctx, c, crds.CRDs())
}

// InstallCRDList creates (or updates) the CRDs and waits until the API server
// serves them. The list is not modified (clusters in parallel share it).
func InstallCRDList(ctx context.Context, c client.Client, list []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range list {
		crd := crd.DeepCopy()
		cur := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, types.NamespacedName{Name: crd.Name}, cur)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, crd); err != nil {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return err
		default:
			crd.ResourceVersion = cur.ResourceVersion
			if err := c.Update(ctx, crd); err != nil {
				return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, crd := range list {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, types.NamespacedName{Name: crd.Name}, cur); err != nil {
				return false, err
			}
			established := false
			for _, cond := range cur.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}

// DefaultNodeClass is a KWOKNodeClass named "default" whose nodes appear after
// delay. Its Ready condition is set by the KWOK provider's controller.
func DefaultNodeClass(delay time.Duration) *kwokv1alpha1.KWOKNodeClass {
	return &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: metav1.Duration{Duration: delay}},
	}
}

// DefaultNodePool launches linux/amd64 KWOK instances of at most maxCPU vCPUs
// (spot or on-demand) from the NodeClass named nodeClass. It never consolidates.
func DefaultNodePool(name, nodeClass string, maxCPU int) *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			// consolidateAfter has no omitempty (upstream's JSON shape), so a Go
			// zero value is sent as "Never". Say so explicitly: the provisioning
			// tests count NodeClaims and need nodes to stay. The demo and the
			// disruption tests set their own (policy and budgets default in the
			// schema: WhenEmptyOrUnderutilized, nodes: 10%).
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration(v1.Never)},
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
					{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
					{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.Itoa(maxCPU + 1)}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: nodeClass},
			}}},
	}
}

// Deployment of replicas pods, each requesting cpu and memory, spread over zones
// when spread is set. The image never runs: KWOK fakes the containers.
func Deployment(namespace, name string, replicas int32, cpu, memory string, spread bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.invalid/" + name + ":1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
						}},
					}},
				},
			},
		},
	}
	if spread {
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}}
	}
	return d
}

// NodeClassReady waits until the KWOKNodeClass reports Ready.
func NodeClassReady(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nc := &kwokv1alpha1.KWOKNodeClass{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return nc.StatusConditions().IsTrue(status.ConditionReady), nil
	})
}

// Process is a running Karpenter binary.
type Process struct {
	Cmd         *exec.Cmd
	LogPath     string
	MetricsPort int
	HealthPort  int
	done        chan error
}

// Build compiles cmd/karpenter into out (incremental: fast when nothing changed).
func Build(root, out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./cmd/karpenter")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/karpenter: %v\n%s", err, b)
	}
	return nil
}

// Start runs the binary against the cluster of kubeconfig, logging (JSON) to
// logPath, with extra environment variables (KEY=VALUE). The child is killed if
// this process dies (parent-death signal), so nothing is orphaned.
func Start(binary, kubeconfig, logPath string, extraEnv ...string) (*Process, error) {
	metrics, err := FreePort()
	if err != nil {
		return nil, err
	}
	health, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"METRICS_PORT="+strconv.Itoa(metrics),
		"HEALTH_PROBE_PORT="+strconv.Itoa(health),
		"LEADER_ELECTION_NAMESPACE=kube-system",
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	return StartCommand(cmd, logPath, metrics, health)
}

// StartCommand starts cmd as a Karpenter process whose metrics and health
// probes listen on the given local ports (a binary, or an OCI runtime running
// the image with the host's network), its output appended to logPath. It is
// killed if this process dies.
func StartCommand(cmd *exec.Cmd, logPath string, metricsPort, healthPort int) (*Process, error) {
	p := &Process{Cmd: cmd, LogPath: logPath, MetricsPort: metricsPort, HealthPort: healthPort, done: make(chan error, 1)}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.Cmd.Stdout, p.Cmd.Stderr = logf, logf
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { p.done <- p.Cmd.Wait(); logf.Close() }()
	return p, nil
}

// Ready waits for /readyz.
func (p *Process) Ready(ctx context.Context, timeout time.Duration) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", p.HealthPort)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-p.done:
			p.done <- err
			return false, fmt.Errorf("karpenter exited (%v); log in %s", err, p.LogPath)
		default:
		}
		return httpOK(url), nil
	})
}

// IsReady reports whether /readyz answers 200 now.
func (p *Process) IsReady() bool {
	return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.HealthPort))
}

// Stop sends SIGTERM and waits (then SIGKILL after timeout).
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		return fmt.Errorf("karpenter did not stop within %s of SIGTERM", timeout)
	}
}

// Exited reports whether the process ended (it exits on its own when it
// loses its leader lease, e.g. after an API server outage).
func (p *Process) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL (a crash, no clean-up) and waits for the exit.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// Usage is the process's resource use so far.
type Usage struct {
	CPU     time.Duration // user + system
	PeakRSS int64         // bytes (VmHWM)
	Wall    time.Duration
}

// ResourceUsage reads /proc for the live process.
func (p *Process) ResourceUsage() (Usage, error) {
	pid := p.Cmd.Process.Pid
	var u Usage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// After the command: state(0) ... utime(11) stime(12), in clock ticks (100/s on Linux).
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	u.CPU = time.Duration(ut+st) * 10 * time.Millisecond
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			u.PeakRSS = kb * 1024
		}
	}
	return u, nil
}

// FreePort returns a port free now, below Linux's ephemeral range (see
// hack/cluster's ports.go: a port the kernel hands out for ":0" can be taken by
// an outgoing connection before the process it is meant for binds it). The
// local clusters draw theirs from 20000-27999 and reserve them, because their
// components bind seconds after the draw; Karpenter binds its two within a
// second, and draws from the rest of the range so that no cluster's reserved
// port is drawn here.
func FreePort() (int, error) {
	const low, high = 28000, 32767
	for range 1000 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low+1)))
		if err != nil {
			continue // taken: draw another
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", low, high)
}

// Counts summarise the cluster for the live view and the tests.
type Counts struct {
	Pods, Pending, Running int
	// NodeClaims by state: Pending (not launched), Launched, Registered, Ready, Deleting.
	NodeClaims        map[string]int
	NodeClaimsAll     int
	Nodes, ReadyNodes int
	// NodesByType counts nodes per "instance-type zone capacity-type".
	NodesByType map[string]int
	CostPerHour float64
}

// Count lists pods in namespace (all when ""), NodeClaims and the fleet's
// nodes (control-plane nodes, where the controller runs, are not counted).
func Count(ctx context.Context, c client.Client, namespace string) (*Counts, error) {
	out := &Counts{NodeClaims: map[string]int{}, NodesByType: map[string]int{}}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		out.Pods++
		switch {
		case p.Spec.NodeName == "":
			out.Pending++
		case p.Status.Phase == corev1.PodRunning:
			out.Running++
		}
	}
	ncs := &v1.NodeClaimList{}
	if err := c.List(ctx, ncs); err != nil {
		return nil, err
	}
	out.NodeClaimsAll = len(ncs.Items)
	for i := range ncs.Items {
		out.NodeClaims[NodeClaimState(&ncs.Items[i])]++
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		if _, control := n.Labels["node-role.kubernetes.io/control-plane"]; control {
			continue // the cluster's own node (the controller's), not the fleet
		}
		out.Nodes++
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				out.ReadyNodes++
			}
		}
		key := fmt.Sprintf("%s %s %s", n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], n.Labels[v1.CapacityTypeLabelKey])
		out.NodesByType[key]++
		if price, err := strconv.ParseFloat(n.Labels["eks-node-viewer/instance-price"], 64); err == nil {
			out.CostPerHour += price
		}
	}
	return out, nil
}

// NodeClaimState names the furthest lifecycle step the NodeClaim reached.
func NodeClaimState(nc *v1.NodeClaim) string {
	conds := nc.StatusConditions()
	switch {
	case nc.DeletionTimestamp != nil:
		return "Deleting"
	case conds.IsTrue(v1.ConditionTypeInitialized):
		return "Ready"
	case conds.IsTrue(v1.ConditionTypeRegistered):
		return "Registered"
	case conds.IsTrue(v1.ConditionTypeLaunched):
		return "Launched"
	default:
		return "Pending"
	}
}

// SortedKeys returns m's keys in order.
func SortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ServiceAccountKubeconfig writes to path a kubeconfig for the cluster of
// adminKubeconfig that authenticates as the ServiceAccount ns/name with a
// token from the TokenRequest API (valid a day: the demo runs until Ctrl-C): a process started with it
// holds exactly that ServiceAccount's RBAC, as in a pod.
func ServiceAccountKubeconfig(ctx context.Context, c client.Client, adminKubeconfig, ns, name, path string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("requesting a token for %s/%s: %w", ns, name, err)
	}
	cfg, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		return err
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return fmt.Errorf("kubeconfig %s has no current context", adminKubeconfig)
	}
	user := "system:serviceaccount:" + ns + ":" + name
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{user: {Token: tr.Status.Token}}
	kctx.AuthInfo = user
	return clientcmd.WriteToFile(*cfg, path)
}

// RepoRoot finds the module root above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/karpenter-go/karpenter\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("repository root not found above %s", dir)
		}
	}
}

func httpOK(url string) bool {
	resp, err := httpClient.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}
