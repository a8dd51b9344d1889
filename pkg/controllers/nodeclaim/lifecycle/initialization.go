package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Initialization marks a registered NodeClaim Initialized once its Node can
// run the pods it was launched for.
type Initialization struct {
	kubeClient client.Client
	clock      clock.Clock
}

// Reconcile checks the Node: Ready, no startup taints, no boot-time taints,
// every requested extended resource allocatable. Then it labels the Node
// karpenter.sh/initialized=true and sets Initialized.
func (i *Initialization) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	conds := conditions(nc, i.clock)
	if conds.Get(v1.ConditionTypeInitialized).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	// Initialization holds for one boot: while a reboot is in progress the
	// node that is still up (or coming back) must not complete it; the
	// reboot controller ends the reboot first.
	if conds.Get(v1.ConditionTypeRebooting).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	if !conds.Get(v1.ConditionTypeLaunched).IsTrue() {
		conds.SetUnknown(v1.ConditionTypeInitialized, "NotLaunched", "Node not launched")
		return reconcile.Result{}, false, nil
	}
	if !conds.Get(v1.ConditionTypeRegistered).IsTrue() {
		conds.SetUnknown(v1.ConditionTypeInitialized, "NotRegistered", "Node not registered")
		return reconcile.Result{}, false, nil
	}
	var node *corev1.Node
	if p := passOf(ctx); p != nil && p.node != nil {
		node = p.node
	} else {
		var err error
		if node, err = nodeForNodeClaim(ctx, i.kubeClient, nc); err != nil {
			return reconcile.Result{}, false, err
		}
	}
	if node == nil {
		conds.SetUnknown(v1.ConditionTypeInitialized, "NodeNotFound", "Node not found")
		return reconcile.Result{}, false, nil
	}
	if reason, msg := notInitialized(nc, node); reason != "" {
		conds.SetUnknown(v1.ConditionTypeInitialized, reason, msg)
		return reconcile.Result{}, false, nil
	}
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.NodeInitializedLabelKey] = "true"
		if err := i.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, false, err
		}
	}
	conds.SetTrue(v1.ConditionTypeInitialized)
	return reconcile.Result{}, false, nil
}

// notInitialized returns why the Node is not initialized yet, or "".
func notInitialized(nc *v1.NodeClaim, node *corev1.Node) (reason, message string) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "NodeNotReady", "Node status is NotReady"
	}
	for _, st := range nc.Spec.StartupTaints {
		if hasTaint(node.Spec.Taints, st) {
			return "StartupTaintsExist", fmt.Sprintf("StartupTaint %q still exists", st.ToString())
		}
	}
	for _, t := range node.Spec.Taints {
		if scheduling.IsEphemeralTaint(t) {
			return "KnownEphemeralTaintsExist", fmt.Sprintf("KnownEphemeralTaint %q still exists", t.ToString())
		}
	}
	for name, q := range nc.Spec.Resources.Requests {
		if q.IsZero() || !isExtended(name) {
			continue
		}
		if a, ok := node.Status.Allocatable[name]; !ok || a.IsZero() {
			return "ResourceNotRegistered", fmt.Sprintf("Resource %q was requested but not registered", name)
		}
	}
	return "", ""
}

// isExtended: cpu, memory, ephemeral storage and pods are always reported by
// the kubelet; anything else (GPUs, ...) is registered by a device plugin later.
func isExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		return false
	}
	return true
}
