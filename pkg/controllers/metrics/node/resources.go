package node

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// podRequests is what the kube-scheduler accounts for the pod; the solver's
// definition, so the gauges agree with what provisioning packs.
func podRequests(p *corev1.Pod) corev1.ResourceList { return scheduling.PodRequests(p) }

// podLimits is the pod's effective limits, as Kubernetes computes them.
func podLimits(p *corev1.Pod) corev1.ResourceList { return scheduling.PodLimits(p) }

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
