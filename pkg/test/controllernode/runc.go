package controllernode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// ServiceAccountDir is where a pod's ServiceAccount token, the cluster's CA
// and the namespace are projected, and where in-cluster clients read them.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// RuncMissing is the error when the node runs pods in runc and there is none.
const RuncMissing = "runc is not installed: install Debian's runc (apt-get install -y runc); the controller image runs under it"

// runcImage prepares the node's image: the runc binary, and the host
// platform's root filesystem unpacked once from the OCI layout (read-only to
// every container, as the chart asks).
func (n *Node) runcImage() error {
	if n.Image == "" || n.rootfs != "" {
		return nil
	}
	bin, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("%s: %w", RuncMissing, err)
	}
	n.runc = bin
	rootfs := filepath.Join(n.Dir, "rootfs")
	if err := os.RemoveAll(rootfs); err != nil {
		return err
	}
	img, err := imagebuild.Open(n.Image)
	if err != nil {
		return fmt.Errorf("reading image layout %s: %w", n.Image, err)
	}
	cf, err := imagebuild.Unpack(n.Image, imagebuild.HostArch(), rootfs)
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", n.Image, err)
	}
	n.rootfs, n.imageConfig, n.image = rootfs, cf, img
	return nil
}

// errImageNotPresent is a pod's image that is not the node's: like a
// kubelet with imagePullPolicy Never, the node does not start it and says
// why in the container's status (ErrImageNeverPull).
type errImageNotPresent struct{ msg string }

func (e errImageNotPresent) Error() string { return e.msg }

// checkImage accepts the container's image when it names the node's image:
// by digest (the index's or the host platform's), or, without a digest, by
// the version tag the layout carries (the chart's appVersion).
func (n *Node) checkImage(image string) error {
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest {
		if digest == n.image.Index.String() || digest == n.image.Images[imagebuild.HostArch()].String() {
			return nil
		}
	} else if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") && name[i+1:] == n.image.Version {
		return nil
	}
	return errImageNotPresent{fmt.Sprintf("image %q is not present on node %s, which holds only %s (tag %s, index %s); set controller.image.digest to the index digest of `make image`",
		image, n.Name, n.Image, n.image.Version, n.image.Index)}
}

// startContainer runs the pod's first container from the image under runc,
// with what the pod spec asks: the image's entrypoint and the container's
// command and args, its environment (the image's, then the container's,
// resolved as containerEnv does), its user and group, a read-only root
// filesystem, no capabilities, no privilege escalation, its emptyDir mounts
// as tmpfs, and the ServiceAccount's token, the cluster's CA and the
// namespace at ServiceAccountDir, as a kubelet projects them. The container
// shares the host's network namespace (hostNetwork): the in-cluster client
// reaches the API server at KUBERNETES_SERVICE_HOST/PORT, the server's
// address, and the health and metrics ports are free ports of this host.
func (n *Node) startContainer(ctx context.Context, pp *podProcess) error {
	pod := pp.pod
	ctr := pod.Spec.Containers[0]
	if err := n.checkImage(ctr.Image); err != nil {
		return err
	}
	id := fmt.Sprintf("%s-%d", pod.Name, pp.restarts)
	bundle := filepath.Join(n.Dir, "bundles", id)
	if err := os.RemoveAll(bundle); err != nil {
		return err
	}
	secrets := filepath.Join(bundle, "serviceaccount")
	if err := os.MkdirAll(secrets, 0o755); err != nil {
		return err
	}
	host, port, ca, err := n.apiServer()
	if err != nil {
		return err
	}
	token, err := n.podToken(ctx, pod)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(pod.Namespace)} {
		if err := os.WriteFile(filepath.Join(secrets, name), data, 0o644); err != nil {
			return err
		}
	}
	metrics, err := kit.FreePort()
	if err != nil {
		return err
	}
	health, err := kit.FreePort()
	if err != nil {
		return err
	}
	env, portVars := containerEnv(pod, ctr)
	env = append(append(append([]string{}, n.imageConfig.Config.Env...), env...),
		"METRICS_PORT="+strconv.Itoa(metrics), "HEALTH_PROBE_PORT="+strconv.Itoa(health),
		"KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	env = append(env, n.ExtraEnv...)
	args := append([]string{}, n.imageConfig.Config.Entrypoint...)
	if len(ctr.Command) > 0 {
		args = append([]string{}, ctr.Command...)
	}
	args = append(args, ctr.Args...)
	uid, gid := int64(0), int64(0)
	readOnly, noNewPrivs := false, false
	if sc := ctr.SecurityContext; sc != nil {
		uid, gid = ptr.Deref(sc.RunAsUser, 0), ptr.Deref(sc.RunAsGroup, 0)
		readOnly = ptr.Deref(sc.ReadOnlyRootFilesystem, false)
		noNewPrivs = !ptr.Deref(sc.AllowPrivilegeEscalation, true)
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": []string{"nosuid", "noexec", "nodev", "ro"}},
		{"destination": ServiceAccountDir, "type": "bind", "source": secrets, "options": []string{"rbind", "ro"}},
	}
	emptyDirs := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
	}
	for _, m := range ctr.VolumeMounts {
		if emptyDirs[m.Name] {
			mounts = append(mounts, map[string]any{"destination": m.MountPath, "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev", "mode=1777"}})
		} else if m.MountPath != ServiceAccountDir {
			n.Logf("controller node: pod %s/%s: volume %s is not mounted under runc (only emptyDir volumes are)", pod.Namespace, pod.Name, m.Name)
		}
	}
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal": false, "user": map[string]any{"uid": uid, "gid": gid}, "args": args, "env": env,
			"cwd": nonEmpty(n.imageConfig.Config.WorkingDir, "/"), "noNewPrivileges": noNewPrivs,
			// drop: ["ALL"]: no capability in any set.
			"capabilities": map[string]any{"bounding": []string{}, "effective": []string{}, "permitted": []string{}, "inheritable": []string{}, "ambient": []string{}},
		},
		"root":     map[string]any{"path": n.rootfs, "readonly": readOnly},
		"hostname": pod.Name,
		"mounts":   mounts,
		"linux": map[string]any{
			// No network namespace: the host's (hostNetwork).
			"namespaces":    []map[string]any{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"maskedPaths":   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644); err != nil {
		return err
	}
	_ = n.runcCmd("delete", "--force", id).Run()
	pp.log = filepath.Join(n.Dir, pod.Name+".log")
	cmd := n.runcCmd("run", "--bundle", bundle, id)
	p, err := kit.StartCommand(cmd, pp.log, metrics, health)
	if err != nil {
		return err
	}
	pp.proc, pp.started, pp.container = p, time.Now(), id
	pp.mapPorts(portVars)
	return nil
}

// runcCmd runs runc with its state under the node's directory.
func (n *Node) runcCmd(args ...string) *exec.Cmd {
	return exec.Command(n.runc, append([]string{"--root", filepath.Join(n.Dir, "runc")}, args...)...)
}

// removeContainer deletes a container's runc state (killing what is left of
// it): after its process stopped, or when the node stops.
func (n *Node) removeContainer(pp *podProcess) {
	if n.runc == "" || pp.container == "" {
		return
	}
	_ = n.runcCmd("delete", "--force", pp.container).Run()
}

// apiServer is the host, port and CA of the API server in the admin kubeconfig.
func (n *Node) apiServer() (string, string, []byte, error) {
	cfg, err := clientcmd.LoadFromFile(n.AdminKubeconfig)
	if err != nil {
		return "", "", nil, err
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil {
		return "", "", nil, fmt.Errorf("kubeconfig %s has no current cluster", n.AdminKubeconfig)
	}
	cluster := cfg.Clusters[kctx.Cluster]
	u, err := url.Parse(cluster.Server)
	if err != nil {
		return "", "", nil, err
	}
	ca := cluster.CertificateAuthorityData
	if len(ca) == 0 && cluster.CertificateAuthority != "" {
		if ca, err = os.ReadFile(cluster.CertificateAuthority); err != nil {
			return "", "", nil, err
		}
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return u.Hostname(), port, ca, nil
}

// podToken is a token of the pod's ServiceAccount bound to the pod, as the
// kubelet's projected token is.
func (n *Node) podToken(ctx context.Context, pod *corev1.Pod) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := n.KubeClient.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", pod.Namespace, sa, err)
	}
	return tr.Status.Token, nil
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// PodContainer is the runc container ID and local port of each container
// port of the node's pod ns/name ("" and nil when the node does not run it).
func (n *Node) PodContainer(ns, name string) (string, map[int32]int) {
	pp := n.lookup(ns, name)
	if pp == nil {
		return "", nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ports := map[int32]int{}
	for k, v := range pp.ports {
		ports[k] = v
	}
	return pp.container, ports
}

// ContainerPID is the host PID of a runc container's process.
func (n *Node) ContainerPID(id string) (int, error) {
	out, err := n.runcCmd("state", id).Output()
	if err != nil {
		return 0, fmt.Errorf("runc state %s: %w", id, err)
	}
	var st struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, err
	}
	if st.Status != "running" {
		return 0, fmt.Errorf("container %s is %s", id, st.Status)
	}
	return st.Pid, nil
}
