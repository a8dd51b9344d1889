package provisioning

import (
	"context"
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// decisionPods lists what one provisioning decision solves for: PendingPods
// plus the pods kube-scheduler has not tried yet (AwaitingScheduler), in the
// same stable order, then the CapacityBuffers' virtual pods, and the uids of
// the pods awaiting kube-scheduler.
func (p *Provisioner) decisionPods(ctx context.Context) ([]*corev1.Pod, map[types.UID]bool, error) {
	unbound, err := podindex.OnNodeReadOnly(ctx, p.kube, "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []*corev1.Pod
	early := map[types.UID]bool{}
	for _, pod := range unbound {
		switch {
		case IsProvisionable(pod):
			out = append(out, pod)
		case AwaitingScheduler(pod):
			out = append(out, pod)
			early[pod.UID] = true
		}
	}
	out = append(out, p.cluster.PodsOnDeletingCapacity()...)
	sortPods(out)
	// The buffers' virtual pods last, in the store's order.
	out = append(out, p.opts.Buffers.VirtualPods()...)
	return out, early, nil
}

// sortPods orders pods oldest first, then by uid: a decision does not depend
// on the informer's map order.
func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		}
		return pods[i].UID < pods[j].UID
	})
}

// withoutPreemptors drops from the solver's pods those kube-scheduler has not
// tried yet that it could make room for by preemption: their priority is
// above that of a pod bound to an existing node and their preemption policy
// allows it. kube-scheduler would evict rather than wait for a new node, so
// these pods are left until it marks them Unschedulable (its preemption then
// failed, or it nominated a node and they are not provisionable at all).
func withoutPreemptors(in *scheduling.Input, early map[types.UID]bool) []*corev1.Pod {
	if len(early) == 0 {
		return in.Pods
	}
	lowest := int32(math.MaxInt32)
	for _, n := range in.ExistingNodes {
		for _, pod := range n.Pods {
			if pod.DeletionTimestamp == nil && priority(pod) < lowest {
				lowest = priority(pod)
			}
		}
	}
	out := make([]*corev1.Pod, 0, len(in.Pods))
	for _, pod := range in.Pods {
		if early[pod.UID] && mayPreempt(pod) && priority(pod) > lowest {
			continue
		}
		out = append(out, pod)
	}
	return out
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

func mayPreempt(p *corev1.Pod) bool {
	return p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever
}
