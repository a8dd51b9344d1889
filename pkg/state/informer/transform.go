package informer

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// LastAppliedAnnotation is kubectl's copy of the whole applied manifest.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Transform is the manager cache's transform (cache.Options.DefaultTransform): it drops, from
// every object as it enters the cache, what no controller of Karpenter reads, so that a cluster
// of 100,000 nodes and a million pods is held in a few GB instead of many:
//
//   - every object: managedFields (often the largest part of an object) and kubectl's
//     last-applied-configuration annotation;
//   - Pods: per container (and init/ephemeral container) the environment, command, arguments,
//     working directory, probes, lifecycle hooks and volume mounts, the container statuses and
//     IPs, every volume but claims (persistent or ephemeral), and every condition but
//     PodScheduled, Ready and DisruptionTarget; what scheduling, disruption, termination and
//     the metrics read (resources, pod-level resources, ports, affinity, tolerations, topology
//     spread, claims, owners, labels, annotations, priority, phase, start time, those
//     conditions) stays. A pod resized in place whose status leaves its requests other than
//     its spec has them (scheduling.ResizeChangesRequests) keeps, of its container statuses,
//     the names and allocated and applied requests, and its PodResizePending condition;
//   - Nodes: the list of images present on the node;
//   - NodeClaims: nothing more (Karpenter writes their status from cached copies).
//
// Then what repeats across objects is shared rather than held once per object (see
// intern.go): at 100,000 nodes and a million pods that is most of the cache
// (BenchmarkStateMemory; TestTransformPodPinned pins what survives).
//
// Updates built from a cached object stay safe: managedFields left out of an update keep
// their stored value, a Node's status is ignored by an update of the Node, and Karpenter
// never updates a Pod. It modifies the object in place, as cache transforms do (the object is
// fresh from the decoder and not yet shared).
func Transform(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			if _, ok := a[LastAppliedAnnotation]; ok {
				delete(a, LastAppliedAnnotation)
				if len(a) == 0 {
					m.SetAnnotations(nil)
				}
			}
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		transformPod(o)
	case *corev1.Node:
		transformNode(o)
	case *v1.NodeClaim:
		transformNodeClaim(o)
	}
	return obj, nil
}

// podConditions are the pod conditions Karpenter reads: PodScheduled (provisioning's trigger
// and the pod metrics), Ready (the pod metrics) and DisruptionTarget (a pod being evicted).
var podConditions = map[corev1.PodConditionType]bool{corev1.PodScheduled: true, corev1.PodReady: true, corev1.DisruptionTarget: true}

func transformPod(o *corev1.Pod) {
	internMeta(&o.ObjectMeta, true)
	for i := range o.Spec.InitContainers {
		slimContainer(&o.Spec.InitContainers[i])
	}
	for i := range o.Spec.Containers {
		slimContainer(&o.Spec.Containers[i])
	}
	o.Spec.InitContainers = internSlice(&containers, o.Spec.InitContainers)
	o.Spec.Containers = internSlice(&containers, o.Spec.Containers)
	for i := range o.Spec.EphemeralContainers {
		c := &o.Spec.EphemeralContainers[i].EphemeralContainerCommon
		c.Env, c.EnvFrom, c.Command, c.Args, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	}
	// Volumes: only claims (persistent or ephemeral) constrain where a pod can go; the
	// service-account token, config maps, secrets and the like do not.
	// (A new slice: the dropped ones must not stay reachable behind its length.)
	var vols []corev1.Volume
	for _, v := range o.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			vols = append(vols, v)
		}
	}
	o.Spec.Volumes = vols
	sp := &o.Spec
	sp.Tolerations = internSlice(&tolerations, sp.Tolerations)
	sp.TopologySpreadConstraints = internSlice(&spreads, sp.TopologySpreadConstraints)
	sp.NodeSelector = internMap(&labelMaps, sp.NodeSelector)
	sp.Overhead = internResources(sp.Overhead)
	if sp.Affinity != nil {
		if raw, err := sp.Affinity.Marshal(); err == nil {
			sp.Affinity = affinities.get(string(raw), sp.Affinity)
		}
	}
	if sp.SecurityContext != nil {
		if raw, err := sp.SecurityContext.Marshal(); err == nil {
			sp.SecurityContext = podSecurity.get(string(raw), sp.SecurityContext)
		}
	}
	sp.NodeName = str(sp.NodeName)
	sp.ServiceAccountName, sp.DeprecatedServiceAccount = str(sp.ServiceAccountName), str(sp.DeprecatedServiceAccount)
	sp.SchedulerName, sp.PriorityClassName = str(sp.SchedulerName), str(sp.PriorityClassName)
	sp.DNSPolicy, sp.RestartPolicy = corev1.DNSPolicy(str(string(sp.DNSPolicy))), corev1.RestartPolicy(str(string(sp.RestartPolicy)))

	if sp.Resources != nil {
		sp.Resources.Limits, sp.Resources.Requests = internResources(sp.Resources.Limits), internResources(sp.Resources.Requests)
	}

	st := &o.Status
	resized := scheduling.ResizeChangesRequests(o)
	if resized {
		st.ContainerStatuses, st.InitContainerStatuses = slimStatuses(st.ContainerStatuses), slimStatuses(st.InitContainerStatuses)
	} else {
		st.ContainerStatuses, st.InitContainerStatuses = nil, nil
	}
	st.EphemeralContainerStatuses = nil
	st.PodIP, st.PodIPs, st.HostIP, st.HostIPs = "", nil, "", nil
	var conds []corev1.PodCondition
	for _, c := range st.Conditions {
		if podConditions[c.Type] || (resized && c.Type == corev1.PodResizePending) {
			c.Type, c.Status = corev1.PodConditionType(str(string(c.Type))), corev1.ConditionStatus(str(string(c.Status)))
			c.Reason, c.Message = str(c.Reason), str(c.Message)
			conds = append(conds, c)
		}
	}
	st.Conditions = slices.Clip(conds)
	st.Phase, st.QOSClass = corev1.PodPhase(str(string(st.Phase))), corev1.PodQOSClass(str(string(st.QOSClass)))
	st.Reason, st.NominatedNodeName = str(st.Reason), str(st.NominatedNodeName)
}

// transformNode drops only status a Node's update ignores (images); the rest is shared.
func transformNode(o *corev1.Node) {
	internMeta(&o.ObjectMeta, false)
	o.Spec.Taints = internSlice(&taints, o.Spec.Taints)
	st := &o.Status
	st.Images = nil
	st.Allocatable, st.Capacity = internResources(st.Allocatable), internResources(st.Capacity)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status = corev1.NodeConditionType(str(string(c.Type))), corev1.ConditionStatus(str(string(c.Status)))
		c.Reason, c.Message = str(c.Reason), str(c.Message)
	}
	for i := range st.Addresses {
		st.Addresses[i].Type = corev1.NodeAddressType(str(string(st.Addresses[i].Type)))
	}
	ni := &st.NodeInfo
	ni.KernelVersion, ni.OSImage, ni.ContainerRuntimeVersion = str(ni.KernelVersion), str(ni.OSImage), str(ni.ContainerRuntimeVersion)
	ni.KubeletVersion, ni.KubeProxyVersion = str(ni.KubeletVersion), str(ni.KubeProxyVersion)
	ni.OperatingSystem, ni.Architecture = str(ni.OperatingSystem), str(ni.Architecture)
}

// transformNodeClaim drops nothing (Karpenter writes NodeClaims' status from cached copies):
// it only shares what repeats across claims.
func transformNodeClaim(o *v1.NodeClaim) {
	internMeta(&o.ObjectMeta, true)
	sp := &o.Spec
	sp.Taints, sp.StartupTaints = internSlice(&taints, sp.Taints), internSlice(&taints, sp.StartupTaints)
	if len(sp.Requirements) > 0 {
		sp.Requirements = internJSON("requirements", slices.Clip(sp.Requirements))
	}
	if sp.NodeClassRef != nil {
		sp.NodeClassRef = internJSON("nodeClassRef", sp.NodeClassRef)
	}
	sp.Resources.Requests = internResources(sp.Resources.Requests)
	st := &o.Status
	st.Allocatable, st.Capacity = internResources(st.Allocatable), internResources(st.Capacity)
	st.ImageID = str(st.ImageID)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status = str(c.Type), metav1.ConditionStatus(str(string(c.Status)))
		c.Reason, c.Message = str(c.Reason), str(c.Message)
	}
}

// slimStatuses keeps of container statuses what PodRequests reads of a resized pod: the name
// and the allocated and applied requests.
func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		out[i] = corev1.ContainerStatus{Name: str(in[i].Name), AllocatedResources: internResources(in[i].AllocatedResources)}
		if r := in[i].Resources; r != nil && r.Requests != nil {
			out[i].Resources = &corev1.ResourceRequirements{Requests: internResources(r.Requests)}
		}
	}
	return out
}

func slimContainer(c *corev1.Container) {
	c.Env, c.EnvFrom, c.Command, c.Args, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.WorkingDir, c.TerminationMessagePath = "", ""
	c.Name, c.Image = str(c.Name), str(c.Image)
	c.ImagePullPolicy, c.TerminationMessagePolicy = corev1.PullPolicy(str(string(c.ImagePullPolicy))), corev1.TerminationMessagePolicy(str(string(c.TerminationMessagePolicy)))
	c.Resources.Limits, c.Resources.Requests = internResources(c.Resources.Limits), internResources(c.Resources.Requests)
}
