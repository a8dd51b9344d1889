package node

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// podRequests is what the kube-scheduler accounts for the pod; the solver's
// definition, so the gauges agree with what provisioning packs.
func podRequests(p *corev1.Pod) corev1.ResourceList { return scheduling.PodRequests(p) }

// podLimits mirrors how Kubernetes computes a pod's effective limits: app
// containers and restartable init containers (sidecars) add up, each ordinary
// init container counts with the sidecars started before it and the larger of
// the two wins, and the pod overhead is added only to resources that have a
// limit (an unlimited resource stays unlimited).
func podLimits(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range p.Spec.Containers {
		addInto(out, p.Spec.Containers[i].Resources.Limits)
	}
	sidecars := corev1.ResourceList{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addInto(out, c.Resources.Limits)
			addInto(sidecars, c.Resources.Limits)
			continue
		}
		peak := sum(c.Resources.Limits, sidecars)
		for name, q := range peak {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range p.Spec.Overhead {
		if cur, ok := out[name]; ok {
			cur.Add(q)
			out[name] = cur
		}
	}
	return out
}

func addInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name]
		cur.Add(q)
		dst[name] = cur
	}
}

func sum(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		addInto(out, l)
	}
	return out
}

// subtract returns a - b for every resource in a.
func subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		d := q.DeepCopy()
		if bq, ok := b[name]; ok {
			d.Sub(bq)
		}
		out[name] = d
	}
	return out
}
