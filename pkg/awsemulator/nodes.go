package awsemulator

import (
	"context"
	"encoding/base64"
	"fmt"
	"log"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Nodes that join: when an instance reaches "running" the emulator plays its bootstrap
// and kubelet. It reads the launch template's user data as the family's bootstrap would
// (bootstrap*.go) and registers a Node in the cluster given by Options.Kubeconfig or
// RegisterNodesTo, annotated and labelled kwok.x-k8s.io/node=fake so the local cluster's
// KWOK runs it (Ready, heartbeats, pods). User data that names another cluster, or a
// bootstrap that names none, gives no Node, as on EC2; the reason is logged and kept in
// RegistrationErrors. A terminated instance's Node is deleted, as the cloud controller
// manager does.

// KWOKNodeKey is the annotation and label that hands a Node to KWOK.
const KWOKNodeKey = "kwok.x-k8s.io/node"

// vmMemoryOverheadPercent is what the hypervisor and firmware keep of an instance's
// memory (Karpenter's VM_MEMORY_OVERHEAD_PERCENT default).
const vmMemoryOverheadPercent = 0.075

// RegistrationError says why an instance did not become a Node.
type RegistrationError struct {
	InstanceID string
	NodeName   string
	Reason     string
	Time       time.Time
}

type nodeRegistrar struct {
	mu     sync.Mutex
	client kubernetes.Interface
	errors []RegistrationError
	retry  []nodeOp
}

// nodeOp is a Node to create (node set), a Node to delete (remove), a Node that
// booted again (bootID set: its status reports the new boot) or a registration
// that fails (err).
type nodeOp struct {
	instanceID string
	nodeName   string
	node       *corev1.Node
	remove     bool
	bootID     string
	err        string
	attempts   int
}

// RegisterNodesTo makes instances that reach "running" from now on join the cluster cfg
// reaches as Nodes.
func (e *Emulator) RegisterNodesTo(cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("node registration client: %w", err)
	}
	e.nodes.mu.Lock()
	e.nodes.client = cs
	e.nodes.mu.Unlock()
	return nil
}

func (e *Emulator) registerNodesToKubeconfig(path string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return e.RegisterNodesTo(cfg)
}

// RegistrationErrors lists the instances that reached running but could not join, oldest first.
func (e *Emulator) RegistrationErrors() []RegistrationError {
	e.nodes.mu.Lock()
	defer e.nodes.mu.Unlock()
	return append([]RegistrationError(nil), e.nodes.errors...)
}

// registration builds the Node the instance's bootstrap would register (under e.mu).
func (s *state) registration(in *Instance) nodeOp {
	op := nodeOp{instanceID: in.ID, nodeName: in.PrivateDNSName}
	raw, err := base64.StdEncoding.DecodeString(in.UserData)
	if err != nil {
		op.err = fmt.Sprintf("user data is not base64: %v", err)
		return op
	}
	nb, err := ParseUserData(string(raw))
	if err != nil {
		op.err = err.Error()
		return op
	}
	if nb.Format != "" && nb.ClusterName != s.opts.ClusterName {
		if nb.ClusterName == "" {
			op.err = fmt.Sprintf("%s user data names no cluster; the node cannot join %s", nb.Format, s.opts.ClusterName)
		} else {
			op.err = fmt.Sprintf("%s user data names cluster %q, not %q; the node cannot join", nb.Format, nb.ClusterName, s.opts.ClusterName)
		}
		return op
	}
	var ltData map[string]string
	if lt := s.launchTemplates[in.LaunchTemplateID]; lt != nil {
		ltData = lt.Data
	}
	windows := nb.Format == BootstrapWindows
	if img := s.images[in.ImageID]; img != nil && img.Platform == "windows" {
		windows = true
	}
	op.node = buildNode(s.opts, in, s.instanceTypeIndex[in.InstanceType], nb, rootVolumeGiB(ltData, nb.Format), windows, s.cluster.Version)
	return op
}

// rootVolumeGiB is the size of the volume the kubelet's ephemeral storage lives on:
// Bottlerocket's data volume /dev/xvdb, else the root volume; 20 GiB when unset.
func rootVolumeGiB(data map[string]string, format string) int64 {
	want := "/dev/xvda"
	switch format {
	case BootstrapBottlerocket:
		want = "/dev/xvdb"
	case BootstrapWindows:
		want = "/dev/sda1"
	}
	var largest int64
	for i := 1; ; i++ {
		p := "BlockDeviceMapping." + strconv.Itoa(i) + "."
		dev, ok := data[p+"DeviceName"]
		if !ok {
			break
		}
		size, _ := strconv.ParseInt(data[p+"Ebs.VolumeSize"], 10, 64)
		if dev == want && size > 0 {
			return size
		}
		largest = max(largest, size)
	}
	if largest > 0 {
		return largest
	}
	return 20
}

func buildNode(o Options, in *Instance, it *instanceType, nb *NodeBootstrap, volumeGiB int64, windows bool, version string) *corev1.Node {
	osName, arch := "linux", "amd64"
	if windows {
		osName = "windows"
	}
	if in.Architecture == "arm64" {
		arch = "arm64"
	}
	labels := map[string]string{
		corev1.LabelHostname:                in.PrivateDNSName,
		corev1.LabelOSStable:                osName,
		corev1.LabelArchStable:              arch,
		"beta.kubernetes.io/os":             osName,
		"beta.kubernetes.io/arch":           arch,
		corev1.LabelInstanceTypeStable:      in.InstanceType,
		corev1.LabelInstanceType:            in.InstanceType,
		corev1.LabelTopologyZone:            in.Zone,
		corev1.LabelTopologyRegion:          o.Region,
		corev1.LabelFailureDomainBetaZone:   in.Zone,
		corev1.LabelFailureDomainBetaRegion: o.Region,
		"topology.k8s.aws/zone-id":          in.ZoneID,
		KWOKNodeKey:                         "fake",
	}
	for k, v := range nb.Labels {
		labels[k] = v
	}
	var vcpu, memMiB int64
	maxPods := int64(nb.MaxPods)
	if it != nil {
		vcpu, memMiB = int64(it.vcpu), it.memoryMiB
		if maxPods == 0 {
			maxPods = int64(it.maxENIs*(it.ipv4PerENI-1) + 2)
		}
	}
	if maxPods <= 0 {
		maxPods = 110
	}
	if nb.PodsPerCore > 0 && vcpu > 0 {
		maxPods = min(maxPods, int64(nb.PodsPerCore)*vcpu)
	}
	memMiB -= int64(math.Ceil(float64(memMiB) * vmMemoryOverheadPercent))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(vcpu, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(volumeGiB<<30, resource.BinarySI),
	}
	// Allocatable as the EKS AMIs configure the kubelet: kube-reserved CPU by core
	// count, memory 11 MiB per pod + 255 MiB, 1 GiB storage; eviction at 100 MiB memory
	// and 10% of the disk.
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(max(0, vcpu*1000-reservedMilliCPU(vcpu)), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(max(0, memMiB-11*maxPods-255-100)<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(max(0, (volumeGiB<<30)-(1<<30)-(volumeGiB<<30)/10), resource.BinarySI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   in.PrivateDNSName,
			Labels: labels,
			Annotations: map[string]string{
				KWOKNodeKey: "fake",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: "aws:///" + in.Zone + "/" + in.ID,
			Taints:     append([]corev1.Taint(nil), nb.Taints...),
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: in.PrivateIP},
				{Type: corev1.NodeHostName, Address: in.PrivateDNSName},
				{Type: corev1.NodeInternalDNS, Address: in.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:            arch,
				OperatingSystem:         osName,
				KubeletVersion:          "v" + strings.TrimPrefix(version, "v") + ".0",
				KernelVersion:           "emulated",
				OSImage:                 nb.Format,
				ContainerRuntimeVersion: "containerd://2.0.0",
				MachineID:               in.ID,
				SystemUUID:              in.ID,
				BootID:                  in.BootID(),
			},
		},
	}
}

// reservedMilliCPU is the EKS AMIs' kube-reserved CPU: 6% of the first core, 1% of the
// second, 0.5% of the next two, 0.25% of the rest.
func reservedMilliCPU(vcpu int64) int64 {
	var m float64
	for i := int64(1); i <= vcpu; i++ {
		switch {
		case i == 1:
			m += 60
		case i == 2:
			m += 10
		case i <= 4:
			m += 5
		default:
			m += 2.5
		}
	}
	return int64(m)
}

// applyNodeOps carries out registrations and removals (outside e.mu), retrying the
// ones the API server refused on the next step.
func (e *Emulator) applyNodeOps(ops []nodeOp) {
	r := &e.nodes
	r.mu.Lock()
	cs := r.client
	ops = append(r.retry, ops...)
	r.retry = nil
	r.mu.Unlock()
	for _, op := range ops {
		if op.err != "" {
			log.Printf("aws emulator: instance %s (%s) does not join the cluster: %s", op.instanceID, op.nodeName, op.err)
			r.mu.Lock()
			r.errors = append(r.errors, RegistrationError{InstanceID: op.instanceID, NodeName: op.nodeName, Reason: op.err, Time: e.opts.clock().Now()})
			r.mu.Unlock()
			continue
		}
		if cs == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		switch {
		case op.remove:
			err = cs.CoreV1().Nodes().Delete(ctx, op.nodeName, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		case op.bootID != "":
			patch := fmt.Sprintf(`{"status":{"nodeInfo":{"bootID":%q}}}`, op.bootID)
			_, err = cs.CoreV1().Nodes().Patch(ctx, op.nodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			if apierrors.IsNotFound(err) {
				err = nil // the Node never registered or is gone
			}
		default:
			_, err = cs.CoreV1().Nodes().Create(ctx, op.node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		cancel()
		if err != nil {
			op.attempts++
			if op.attempts >= 50 {
				log.Printf("aws emulator: giving up on node %s of instance %s: %v", op.nodeName, op.instanceID, err)
				continue
			}
			r.mu.Lock()
			r.retry = append(r.retry, op)
			r.mu.Unlock()
		}
	}
}
