package orchestration

import (
	"context"
	"fmt"

	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// conflictRetries bounds how often a write is retried after a conflict. Every
// attempt reads the object fresh from the API server, so a conflict only
// repeats when someone keeps writing the same object; the caller's requeue
// takes over then.
const conflictRetries = 5

// maxMessage is the API's limit on a condition message.
const maxMessage = 32768

// updateNode reads the Node fresh, lets mutate change it, and writes it back
// when mutate reports a change; it reports whether it wrote. A Node that does
// not exist needs nothing.
func (q *Queue) updateNode(ctx context.Context, name string, mutate func(*corev1.Node) bool) (bool, error) {
	for attempt := 1; ; attempt++ {
		n := &corev1.Node{}
		if err := q.reader.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !mutate(n) {
			return false, nil
		}
		err := q.kube.Update(ctx, n)
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("updating node %s: %w", name, err)
		}
		return err == nil, nil
	}
}

// updateNodeClaimStatus is updateNode for a NodeClaim's status.
func (q *Queue) updateNodeClaimStatus(ctx context.Context, name string, mutate func(*v1.NodeClaim) bool) (bool, error) {
	for attempt := 1; ; attempt++ {
		nc := &v1.NodeClaim{}
		if err := q.reader.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !mutate(nc) {
			return false, nil
		}
		err := q.kube.Status().Update(ctx, nc, client.FieldOwner(ownedconditions.OrchestrationManager))
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("updating status of nodeclaim %s: %w", name, err)
		}
		return err == nil, nil
	}
}

// addDisruptedTaint puts karpenter.sh/disrupted:NoSchedule on the node.
func addDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if v1.IsDisruptingTaint(t) {
			return false
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, v1.DisruptedNoScheduleTaint)
	return true
}

// removeDisruptedTaint takes the taint off again, unless the node is being
// deleted: its termination relies on the taint to keep pods away.
func removeDisruptedTaint(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return false
	}
	out := n.Spec.Taints[:0:0]
	for _, t := range n.Spec.Taints {
		if !v1.IsDisruptingTaint(t) {
			out = append(out, t)
		}
	}
	if len(out) == len(n.Spec.Taints) {
		return false
	}
	n.Spec.Taints = out
	return true
}

func hasDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if v1.IsDisruptingTaint(t) {
			return true
		}
	}
	return false
}

// clearDisruptionReason removes the DisruptionReason condition, unless the
// NodeClaim is being deleted (the reason then says why it went).
func clearDisruptionReason(nc *v1.NodeClaim) bool {
	if nc.DeletionTimestamp != nil {
		return false
	}
	return nc.StatusConditions().Clear(v1.ConditionTypeDisruptionReason)
}

// setDisruptionReason records why the NodeClaim is being disrupted.
func (q *Queue) setDisruptionReason(cmd *Command) func(*v1.NodeClaim) bool {
	msg := cmd.Explanation
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	return func(nc *v1.NodeClaim) bool {
		cs := nc.StatusConditions()
		cs.Now = q.clock.Now
		return cs.Set(status.Condition{Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: string(cmd.Method.Reason()), Message: msg})
	}
}

// nodeNameOf finds the Node of a NodeClaim: the one it registered, or, while
// status.nodeName is not written yet, the one with its provider ID. "" when the
// NodeClaim has no Node.
func (q *Queue) nodeNameOf(ctx context.Context, nc *v1.NodeClaim) (string, error) {
	if nc.Status.NodeName != "" {
		return nc.Status.NodeName, nil
	}
	if nc.Status.ProviderID == "" {
		return "", nil
	}
	nodes := &corev1.NodeList{}
	if err := q.reader.List(ctx, nodes); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == nc.Status.ProviderID {
			return nodes.Items[i].Name, nil
		}
	}
	return "", nil
}

func isInitialized(nc *v1.NodeClaim) bool {
	return nc.StatusConditions().Get(v1.ConditionTypeInitialized).IsTrue()
}
