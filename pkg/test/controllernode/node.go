package controllernode

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	"github.com/karpenter-go/karpenter/pkg/test/chartrun"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// Node is a node of the local cluster whose kubelet is this package: the
// pods the scheduler binds to it (the controller Deployment's, as upstream's
// chart runs them on a kind cluster's tainted control-plane node) run either
// from the controller image under runc (Image) or as local processes of the
// controller binary (Binary), with the pod's environment and its
// ServiceAccount's token. It reports them Running and Ready, restarts a
// container that exits (counting restarts as a kubelet does), stops it with
// the pod's grace period when the pod is deleted, and serves the kubelet API
// through the API server: container logs and port-forwarding (to the
// container's metrics and health ports).
type Node struct {
	Name            string
	Client          client.Client
	KubeClient      kubernetes.Interface
	AdminKubeconfig string
	// Binary is the controller; Dir holds its logs and kubeconfigs.
	Binary string
	// Image, when set, is an OCI image layout (hack/image's): the node runs
	// its pods from the host platform's image under runc, as a container
	// runtime would (see startContainer), instead of running Binary.
	Image string
	Dir   string
	// ExtraEnv is added to every container's environment after its own, as
	// an admission webhook would inject it (on EKS, IRSA's or Pod Identity's
	// credentials): what the environment gives a pod outside its chart.
	ExtraEnv []string
	Logf     func(format string, args ...any)
	// ServePodPorts serves the pods' container ports on the host's address
	// (see podIP): the performance suite reads the controller's metrics
	// through the API server's pod proxy. Off for the other suites, whose
	// Chaos specs bind :8080 themselves.
	ServePodPorts bool

	port   int
	podIP  string
	server *http.Server
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu   sync.Mutex
	pods map[types.UID]*podProcess

	// runc mode: the runtime binary, the unpacked root filesystem, the image's config.
	runc        string
	rootfs      string
	imageConfig *v1.ConfigFile
	// image is what the node holds (the layout's index and platform
	// digests, and the version it is named by), as images preloaded on a
	// node: a pod asking for another image does not start.
	image *imagebuild.Result
}

// podProcess is one pod's process (its container, restarted in place).
type podProcess struct {
	pod      *corev1.Pod
	proc     *kit.Process
	restarts int32
	started  time.Time
	ready    bool
	stopping bool
	// ports maps the pod's container ports (by number) to the process's.
	ports map[int32]int
	// listeners serve the pod's IP and container ports (see podIP).
	listeners map[int32]net.Listener
	log       string
	// container is the runc container's ID (runc mode).
	container string
}

// Taint keeps every other pod off the node, as the suites expect
// of a cluster's system nodes (their clean-cluster check fails on a node
// without taints).
var Taint = corev1.Taint{Key: "CriticalAddonsOnly", Effect: corev1.TaintEffectNoSchedule}

// Start registers the node, serves its kubelet API and runs its pods until Stop.
func (n *Node) Start(ctx context.Context) error {
	n.pods = map[types.UID]*podProcess{}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	if err := n.runcImage(); err != nil {
		return err
	}
	cert, err := selfSignedCert()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	n.port = ln.Addr().(*net.TCPAddr).Port
	n.podIP = podIP()
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/{ns}/{pod}/{container}", n.containerLogs)
	mux.HandleFunc("/portForward/{ns}/{pod}", n.portForward)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	n.server = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = n.server.ServeTLS(ln, "", "") }()

	if err := n.register(ctx); err != nil {
		return err
	}
	ctx, n.cancel = context.WithCancel(ctx)
	n.done.Add(2)
	go func() { defer n.done.Done(); n.every(ctx, 10*time.Second, n.heartbeat) }()
	go func() { defer n.done.Done(); n.every(ctx, 500*time.Millisecond, n.syncPods) }()
	return nil
}

// Stop stops the node's processes and its kubelet API.
func (n *Node) Stop() {
	if n.cancel != nil {
		n.cancel()
	}
	n.done.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, pp := range n.pods {
		_ = pp.proc.Stop(30 * time.Second)
		n.removeContainer(pp)
		pp.closeListeners()
	}
	if n.server != nil {
		_ = n.server.Close()
	}
}

// PodLog is the log file of the node's pod ns/name ("" when the node does
// not run it).
func (n *Node) PodLog(ns, name string) string {
	pp := n.lookup(ns, name)
	if pp == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return pp.log
}

// Logs are every log file the node's processes wrote so far, oldest first.
func (n *Node) Logs() []string {
	files, _ := filepath.Glob(filepath.Join(n.Dir, "*.log"))
	return files
}

func (n *Node) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
		corev1.LabelHostname: n.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
		"node-role.kubernetes.io/control-plane": "",
	}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{Taint}}}
	if err := n.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("registering node %s: %w", n.Name, err)
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error { return n.updateNodeStatus(ctx) })
}

func (n *Node) updateNodeStatus(ctx context.Context) error {
	node := &corev1.Node{}
	if err := n.Client.Get(ctx, types.NamespacedName{Name: n.Name}, node); err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(n.port)
	node.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: runtime.GOARCH, KubeletVersion: "controllernode"}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "this node's kubelet runs its pods under runc or as local processes", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	return n.Client.Status().Update(ctx, node)
}

// heartbeat renews the node's Lease, which is what keeps the node lifecycle
// controller from marking it unreachable and evicting the controller.
func (n *Node) heartbeat(ctx context.Context) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: n.Name}
	now := metav1.NewMicroTime(time.Now())
	if err := n.Client.Get(ctx, key, lease); apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.Name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}
		_ = n.Client.Create(ctx, lease)
		return
	} else if err != nil {
		return
	}
	lease.Spec.RenewTime = &now
	_ = n.Client.Update(ctx, lease)
}

func (n *Node) syncPods(ctx context.Context) {
	list, err := n.KubeClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return
	}
	seen := map[types.UID]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		seen[pod.UID] = true
		n.syncPod(ctx, pod)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for uid, pp := range n.pods {
		if !seen[uid] && !pp.stopping {
			pp.stopping = true
			go func() { _ = pp.proc.Stop(30 * time.Second); n.removeContainer(pp); pp.closeListeners() }()
			delete(n.pods, uid)
		}
	}
}

func (n *Node) syncPod(ctx context.Context, pod *corev1.Pod) {
	n.mu.Lock()
	pp := n.pods[pod.UID]
	n.mu.Unlock()
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		// A control-plane process the cluster runs itself (MirrorPod):
		// there is nothing to start, only its status to report.
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodRunning {
			_ = n.updatePodStatus(ctx, pod, &podProcess{started: pod.CreationTimestamp.Time}, true)
		}
		return
	}
	switch {
	case pod.DeletionTimestamp != nil:
		if pp == nil {
			n.finalDelete(ctx, pod)
			return
		}
		n.mu.Lock()
		stopping := pp.stopping
		pp.stopping = true
		n.mu.Unlock()
		if !stopping {
			grace := 30 * time.Second
			if pod.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
			}
			go func() {
				_ = pp.proc.Stop(grace)
				n.removeContainer(pp)
				pp.closeListeners()
				n.finalDelete(context.Background(), pod)
				n.mu.Lock()
				delete(n.pods, pod.UID)
				n.mu.Unlock()
			}()
		}
		return
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return
	case pp == nil:
		pp = &podProcess{pod: pod}
		if err := n.startProcess(ctx, pp); err != nil {
			var notPresent errImageNotPresent
			if errors.As(err, &notPresent) {
				n.imageNotPresent(ctx, pod, notPresent.msg)
				return
			}
			n.Logf("controller node: starting pod %s/%s: %v", pod.Namespace, pod.Name, err)
			return
		}
		n.mu.Lock()
		n.pods[pod.UID] = pp
		n.mu.Unlock()
	case pp.proc.Exited():
		// restartPolicy Always: the container is restarted in place.
		n.removeContainer(pp)
		pp.restarts++
		pp.ready = false
		if err := n.startProcess(ctx, pp); err != nil {
			n.Logf("controller node: restarting pod %s/%s: %v", pod.Namespace, pod.Name, err)
			return
		}
	}
	if n.ServePodPorts {
		n.listen(pp)
	}
	// Ready once the process answers its readiness probe and accepts
	// connections on every container port: a client that sees the pod Ready
	// and port-forwards to its metrics port at once (the performance suite
	// does) must not find the port closed.
	ready := pp.proc.IsReady() && (pp.ready || pp.portsOpen())
	if ready != pp.ready || pod.Status.Phase != corev1.PodRunning || containerRestarts(pod) != pp.restarts {
		if err := n.updatePodStatus(ctx, pod, pp, ready); err == nil {
			pp.ready = ready
		}
	}
}

// imageNotPresent reports the pod's container Waiting with the kubelet's
// reason for an image it will not pull (once: the status carries it).
func (n *Node) imageNotPresent(ctx context.Context, pod *corev1.Pod, msg string) {
	if len(pod.Status.ContainerStatuses) > 0 {
		if w := pod.Status.ContainerStatuses[0].State.Waiting; w != nil && w.Reason == "ErrImageNeverPull" {
			return
		}
	}
	n.Logf("controller node: pod %s/%s: %s", pod.Namespace, pod.Name, msg)
	cur := pod.DeepCopy()
	cur.Status.Phase = corev1.PodPending
	ctr := cur.Spec.Containers[0]
	cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: msg}}}}
	_, _ = n.KubeClient.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
}

func containerRestarts(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return -1
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

// finalDelete is the kubelet's last word on a pod: its containers are gone.
func (n *Node) finalDelete(ctx context.Context, pod *corev1.Pod) {
	_ = n.KubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
}

// startProcess runs the pod's first container as a process: its literal and
// downward-API environment, its ServiceAccount's token, free local ports in
// place of the metrics and health ports it declares. With an Image, the
// container runs from it under runc (startContainer).
func (n *Node) startProcess(ctx context.Context, pp *podProcess) error {
	pod := pp.pod
	if len(pod.Spec.Containers) == 0 {
		return fmt.Errorf("no containers")
	}
	if n.Image != "" {
		return n.startContainer(ctx, pp)
	}
	ctr := pod.Spec.Containers[0]
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	kubeconfig := filepath.Join(n.Dir, pod.Name+".kubeconfig")
	if err := kit.ServiceAccountKubeconfig(ctx, n.Client, n.AdminKubeconfig, pod.Namespace, sa, kubeconfig); err != nil {
		return err
	}
	env, portVars := containerEnv(pod, ctr)
	pp.log = filepath.Join(n.Dir, pod.Name+".log")
	p, err := kit.Start(n.Binary, kubeconfig, pp.log, append(env, n.ExtraEnv...)...)
	if err != nil {
		return err
	}
	pp.proc, pp.started = p, time.Now()
	pp.mapPorts(portVars)
	return nil
}

// mapPorts maps the pod's declared metrics and health ports (portVars, from
// containerEnv) to the local ports its process listens on.
func (pp *podProcess) mapPorts(portVars map[string]int32) {
	pp.ports = map[int32]int{}
	for name, port := range portVars {
		switch name {
		case "METRICS_PORT":
			pp.ports[port] = pp.proc.MetricsPort
		case "HEALTH_PROBE_PORT":
			pp.ports[port] = pp.proc.HealthPort
		}
	}
}

// containerEnv is the container's environment as chartrun.ContainerEnv
// resolves it, the pod's addresses being this host's (see podIP).
func containerEnv(pod *corev1.Pod, ctr corev1.Container) ([]string, map[string]int32) {
	pod = pod.DeepCopy()
	pod.Status.PodIP, pod.Status.HostIP = podIP(), podIP()
	return chartrun.ContainerEnv(pod, ctr)
}

func (n *Node) updatePodStatus(ctx context.Context, pod *corev1.Pod, pp *podProcess, ready bool) error {
	cur, err := n.KubeClient.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		for _, c := range cur.Status.Conditions {
			if c.Type == t && c.Status == s {
				return c
			}
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	start := metav1.NewTime(pp.started)
	cur.Status.Phase = corev1.PodRunning
	cur.Status.HostIP, cur.Status.PodIP = n.podIP, n.podIP
	cur.Status.HostIPs, cur.Status.PodIPs = []corev1.HostIP{{IP: n.podIP}}, []corev1.PodIP{{IP: n.podIP}}
	if cur.Status.StartTime == nil {
		cur.Status.StartTime = &start
	}
	cur.Status.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue),
		cond(corev1.PodInitialized, corev1.ConditionTrue),
		cond(corev1.ContainersReady, readyStatus),
		cond(corev1.PodReady, readyStatus),
		cond(corev1.PodScheduled, corev1.ConditionTrue),
	}
	ctr := cur.Spec.Containers[0]
	id := "process://" + ctr.Name
	switch {
	case pp.container != "":
		id = "runc://" + pp.container
	case pp.proc != nil:
		id = fmt.Sprintf("process://%d", pp.proc.Cmd.Process.Pid)
	}
	cur.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image, Ready: ready, Started: ptr.To(true), RestartCount: pp.restarts,
		ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}},
	}}
	_, err = n.KubeClient.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err
}

// MirrorPod posts a mirror pod for a control-plane process the cluster runs
// outside any pod (kube-scheduler), as a kubelet does for a static pod: in
// kube-system, on this node, with the process's command line, so that what
// looks for the component by its pod (upstream's suites read the scheduler's
// arguments that way) finds it as on a kubeadm or kind cluster.
func (n *Node) MirrorPod(ctx context.Context, component string, argv []string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem, Name: component + "-" + n.Name,
			Labels:      map[string]string{"component": component, "tier": "control-plane"},
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: component, "kubernetes.io/config.source": "file"},
		},
		Spec: corev1.PodSpec{
			NodeName: n.Name, PriorityClassName: "system-node-critical", HostNetwork: true,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: component, Image: "registry.k8s.io/" + component, Command: argv}},
		},
	}
	return n.Client.Create(ctx, pod)
}

// podIP is the address the node's pods report and serve their container
// ports on: this host's first non-loopback IPv4 address, because the API
// server's pod proxy (pods/<name>:<port>/proxy, which upstream's performance
// suite scrapes metrics through) refuses loopback addresses.
func podIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// listen serves the pod's container ports on its IP, each forwarded to the
// process's own port, as a pod network would. A port another pod of this
// host holds (during a rollout, or another cluster's controller) is tried
// again on the next sync.
func (n *Node) listen(pp *podProcess) {
	if pp.listeners == nil {
		pp.listeners = map[int32]net.Listener{}
	}
	for _, ctr := range pp.pod.Spec.Containers[:1] {
		for _, cp := range ctr.Ports {
			port := cp.ContainerPort
			local, ok := pp.ports[port]
			if !ok || pp.listeners[port] != nil {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(n.podIP, strconv.Itoa(int(port))))
			if err != nil {
				continue
			}
			pp.listeners[port] = ln
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go proxyTCP(c, local)
				}
			}()
		}
	}
}

// portsOpen reports whether the process accepts connections on each of its
// container ports.
func (pp *podProcess) portsOpen() bool {
	for _, local := range pp.ports {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), time.Second)
		if err != nil {
			return false
		}
		_ = c.Close()
	}
	return true
}

func (pp *podProcess) closeListeners() {
	for _, ln := range pp.listeners {
		_ = ln.Close()
	}
}

func proxyTCP(in net.Conn, local int) {
	defer in.Close()
	out, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(out, in); close(done) }()
	_, _ = io.Copy(in, out)
	<-done
}

func (n *Node) lookup(ns, name string) *podProcess {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, pp := range n.pods {
		if pp.pod.Namespace == ns && pp.pod.Name == name {
			return pp
		}
	}
	return nil
}

// containerLogs serves a process's log, from sinceTime when asked (the
// controller logs JSON lines with a "time" field).
func (n *Node) containerLogs(w http.ResponseWriter, r *http.Request) {
	pp := n.lookup(r.PathValue("ns"), r.PathValue("pod"))
	if pp == nil {
		http.Error(w, "pod not found on this node", http.StatusNotFound)
		return
	}
	f, err := os.Open(pp.log)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	var since time.Time
	if s := r.URL.Query().Get("sinceTime"); s != "" {
		since, _ = time.Parse(time.RFC3339, s)
	}
	if since.IsZero() {
		_, _ = io.Copy(w, f)
		return
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Time.Before(since) {
			continue
		}
		_, _ = w.Write(append(sc.Bytes(), '\n'))
	}
}

// portForward speaks the kubelet's SPDY port-forward protocol
// (portforward.k8s.io): each forwarded connection is a pair of streams, error
// and data, sharing a requestID; the data stream is copied both ways to the
// process's local port for the pod port asked.
func (n *Node) portForward(w http.ResponseWriter, r *http.Request) {
	pp := n.lookup(r.PathValue("ns"), r.PathValue("pod"))
	if pp == nil {
		http.Error(w, "pod not found on this node", http.StatusNotFound)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	conn.SetIdleTimeout(time.Hour)
	type pair struct{ data, errs httpstream.Stream }
	pending := map[string]*pair{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
			p := pending[id]
			if p == nil {
				p = &pair{}
				pending[id] = p
			}
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				p.errs = s
			case corev1.StreamTypeData:
				p.data = s
			default:
				s.Reset()
				continue
			}
			if p.data != nil && p.errs != nil {
				delete(pending, id)
				go forward(pp, p.data, p.errs)
			}
		}
	}
}

func forward(pp *podProcess, data, errs httpstream.Stream) {
	defer errs.Close()
	defer data.Close()
	port, err := strconv.Atoi(data.Headers().Get(corev1.PortHeader))
	if err != nil {
		fmt.Fprintf(errs, "bad port %q", data.Headers().Get(corev1.PortHeader))
		return
	}
	local, ok := pp.ports[int32(port)]
	if !ok {
		local = port
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		fmt.Fprintf(errs, "pod port %d (local %d): %v", port, local, err)
		return
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(conn, data)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(data, conn)
	<-done
}

func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "conformance-controller-node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
