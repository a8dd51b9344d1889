package lifecycle

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Registration links a launched NodeClaim to the Node its instance joined as.
type Registration struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
}

// Reconcile syncs the NodeClaim's labels, annotations and taints onto its Node,
// takes ownership of the Node (finalizer, owner reference), lifts the
// unregistered taint and marks both registered.
func (r *Registration) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	conds := conditions(nc, r.clock)
	if conds.Get(v1.ConditionTypeRegistered).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	if !conds.Get(v1.ConditionTypeLaunched).IsTrue() {
		conds.SetUnknown(v1.ConditionTypeRegistered, "NotLaunched", "Node not launched")
		return reconcile.Result{}, false, nil
	}
	node, err := nodeForNodeClaim(ctx, r.kubeClient, nc)
	var multi *multipleNodesError
	switch {
	case errors.As(err, &multi):
		conds.SetFalse(v1.ConditionTypeRegistered, "MultipleNodesFound", "Invariant violated, matched multiple nodes")
		return reconcile.Result{}, false, nil
	case err != nil:
		return reconcile.Result{}, false, err
	case node == nil:
		// The Node watch brings us back when it appears; the requeue only
		// guards against a missed event.
		conds.SetUnknown(v1.ConditionTypeRegistered, "NodeNotFound", "Node not registered with cluster")
		return reconcile.Result{RequeueAfter: 30 * time.Second}, false, nil
	}
	if err := r.syncNode(ctx, nc, node); err != nil {
		// The kubelet (or KWOK) writes the new Node's status and labels while we
		// sync it; losing that race is routine, so retry at once, quietly.
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, false, nil
		}
		return reconcile.Result{}, false, err
	}
	if p := passOf(ctx); p != nil {
		p.node = node
	}
	nc.Status.NodeName = node.Name
	conds.SetTrue(v1.ConditionTypeRegistered)
	setNodeRegistrationHealthy(ctx, r.kubeClient, r.clock, nodePoolOf(nc), true, "")
	log.FromContext(ctx).V(1).Info("registered nodeclaim", "NodeClaim", nc.Name, "Node", node.Name)
	return reconcile.Result{}, false, nil
}

func (r *Registration) syncNode(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) error {
	stored := node.DeepCopy()
	if !hasTaint(node.Spec.Taints, v1.UnregisteredNoExecuteTaint) && node.Labels[v1.NodeRegisteredLabelKey] != "true" {
		// Without the taint, pods may have landed before labels and taints
		// were synced; worth telling the user, not worth refusing the node.
		r.recorder.Eventf(node, corev1.EventTypeWarning, ReasonUnregisteredTaintMissing,
			"Missing %s taint which prevents pods from scheduling before Karpenter registers the node", v1.UnregisteredTaintKey)
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	if len(nc.Annotations) > 0 && node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	for k, v := range nc.Annotations {
		node.Annotations[k] = v
	}
	if !hasFinalizer(node) {
		node.Finalizers = append(node.Finalizers, v1.TerminationFinalizer)
	}
	if !ownedBy(node, nc) {
		node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
			APIVersion:         v1.SchemeGroupVersion.String(),
			Kind:               "NodeClaim",
			Name:               nc.Name,
			UID:                nc.UID,
			BlockOwnerDeletion: ptr.To(true),
		})
	}
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if !t.MatchTaint(&v1.UnregisteredNoExecuteTaint) {
			taints = append(taints, t)
		}
	}
	// Unless another component owns the node's taints, the NodeClaim's taints
	// and startup taints are applied once, here.
	if node.Labels[v1.NodeDoNotSyncTaintsLabelKey] != "true" {
		for _, t := range append(append([]corev1.Taint{}, nc.Spec.Taints...), nc.Spec.StartupTaints...) {
			if !hasTaint(taints, t) {
				taints = append(taints, t)
			}
		}
	}
	node.Spec.Taints = taints
	// A node that joins ready to initialize (Ready, no startup or boot
	// taints left once synced) gets Initialization's label in this same
	// patch rather than a second one a moment later.
	if reason, _ := notInitialized(nc, node); reason == "" {
		node.Labels[v1.NodeInitializedLabelKey] = "true"
	}
	if equality.Semantic.DeepEqual(stored, node) {
		return nil
	}
	return r.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

func ownedBy(node *corev1.Node, nc *v1.NodeClaim) bool {
	for _, ref := range node.OwnerReferences {
		if ref.Kind == "NodeClaim" && ref.UID == nc.UID {
			return true
		}
	}
	return false
}
