package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// buffersDecided, after a decision, tells cluster state where the decision
// keeps the CapacityBuffers' virtual pods (the disruption controller counts
// them there, see state.Cluster.SetBufferPods) and writes each buffer's
// Provisioning condition. in is nil when the decision had no pod at all.
//
// A virtual pod is kept on a node when the solver placed it there, when it
// waits on the NodeClaim launched for it (plans put it in that NodeClaim's
// pods before the solve), or when this decision launched a NodeClaim for it:
// from its creation on, the NodeClaim counts as holding the room, so that it is
// not found empty once initialized, before the next decision.
func (p *Provisioner) buffersDecided(ctx context.Context, in *scheduling.Input, r *scheduling.Results) {
	if p.opts.Buffers == nil {
		return
	}
	byNode := map[string][]*corev1.Pod{}
	var existing, launched, failed []*corev1.Pod
	keep := func(node string, pod *corev1.Pod) {
		byNode[node] = append(byNode[node], pod)
	}
	if in != nil {
		for _, n := range in.ExistingNodes {
			if n.Initialized {
				continue // plans keep pods on NodeClaims not initialized only
			}
			for _, pod := range n.Pods {
				if capacitybuffer.IsVirtual(pod) {
					keep(n.Name, pod)
					existing = append(existing, pod)
				}
			}
		}
	}
	for _, pl := range r.ExistingNodes {
		for _, pod := range pl.Pods {
			if capacitybuffer.IsVirtual(pod) {
				keep(pl.Node.Name, pod)
				existing = append(existing, pod)
			}
		}
	}
	for _, c := range r.NewClaims {
		for _, pod := range c.Pods {
			if !capacitybuffer.IsVirtual(pod) {
				continue
			}
			launched = append(launched, pod)
			if claim := p.plans.claimOf(pod.UID); claim != "" {
				keep(claim, pod)
			}
		}
	}
	for pod := range r.PodErrors {
		if capacitybuffer.IsVirtual(pod) {
			failed = append(failed, pod)
		}
	}
	p.cluster.SetBufferPods(byNode)
	if err := p.writeBufferConditions(ctx, capacitybuffer.Tally(existing, launched, failed)); err != nil {
		log.FromContext(ctx).Error(err, "writing the Provisioning condition of capacitybuffers")
	}
}

// writeBufferConditions sets the Provisioning condition of every
// CapacityBuffer from the decision's counts (see
// capacitybuffer.ProvisioningCondition).
func (p *Provisioner) writeBufferConditions(ctx context.Context, counts map[types.NamespacedName]*capacitybuffer.Count) error {
	list := &autoscalingv1beta1.CapacityBufferList{}
	if err := p.kube.List(ctx, list); err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil // the CRD is not installed: no buffer to tell
		}
		return fmt.Errorf("listing capacitybuffers: %w", err)
	}
	var errs []error
	for i := range list.Items {
		b := &list.Items[i]
		cond := capacitybuffer.ProvisioningCondition(b, counts[types.NamespacedName{Namespace: b.Namespace, Name: b.Name}])
		if cond == nil {
			continue
		}
		stored := b.DeepCopy()
		if !apimeta.SetStatusCondition(&b.Status.Conditions, *cond) {
			continue
		}
		if err := p.kube.Status().Patch(ctx, b, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			// A conflict: the buffer changed since the cache saw it; the next decision writes it.
			if !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("capacitybuffer %s/%s: %w", b.Namespace, b.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
