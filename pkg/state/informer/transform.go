package informer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
//     probes, lifecycle hooks and volume mounts, the container statuses and IPs, and every
//     volume but claims (persistent or ephemeral); what scheduling, disruption and termination
//     read (resources, ports, affinity, tolerations, topology spread, claims, owners, labels,
//     annotations, phase and conditions) stays;
//   - Nodes: the list of images present on the node.
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
		for i := range o.Spec.InitContainers {
			slimContainer(&o.Spec.InitContainers[i])
		}
		for i := range o.Spec.Containers {
			slimContainer(&o.Spec.Containers[i])
		}
		for i := range o.Spec.EphemeralContainers {
			c := &o.Spec.EphemeralContainers[i].EphemeralContainerCommon
			c.Env, c.EnvFrom, c.Command, c.Args, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
		}
		o.Status.ContainerStatuses, o.Status.InitContainerStatuses, o.Status.EphemeralContainerStatuses = nil, nil, nil
		o.Status.PodIP, o.Status.PodIPs, o.Status.HostIP, o.Status.HostIPs = "", nil, "", nil
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
	case *corev1.Node:
		o.Status.Images = nil
	}
	return obj, nil
}

func slimContainer(c *corev1.Container) {
	c.Env, c.EnvFrom, c.Command, c.Args, c.VolumeMounts, c.VolumeDevices = nil, nil, nil, nil, nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.WorkingDir, c.TerminationMessagePath = "", ""
}
