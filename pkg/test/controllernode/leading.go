package controllernode

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitLeading waits until a Running, Ready pod of namespace holds the leader
// Lease leaseName (its holder identity starts with the pod's name, as the
// controller's leader election writes it), and returns the pod's name.
func WaitLeading(ctx context.Context, c client.Client, namespace, leaseName string, timeout time.Duration) (string, error) {
	var last string
	var leader string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: leaseName}, lease); err != nil {
			last = err.Error()
			return false, nil
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		}
		pod := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: holder}, pod); err != nil {
			last = fmt.Sprintf("lease held by %q: %v", holder, err)
			return false, nil
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				leader = holder
				return true, nil
			}
		}
		last = fmt.Sprintf("lease held by %s, not Ready", holder)
		return false, nil
	})
	if err != nil {
		var pods corev1.PodList
		_ = c.List(ctx, &pods, client.InNamespace(namespace))
		var states []string
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s node=%q phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		return "", fmt.Errorf("no controller pod leads after %s (%s; pods: %s)", timeout, last, strings.Join(states, ", "))
	}
	return leader, nil
}
