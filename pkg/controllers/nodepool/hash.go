package nodepool

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// HashAnnotations are the annotations a NodeClaim of the NodePool carries:
// the template hash (v1.NodePool.Hash, which the provisioner also stamps new
// NodeClaims with, so a NodePool and its NodeClaims always agree) and its
// version. This controller only keeps the NodePool annotated and re-stamps
// NodeClaims written under another hash version.
func HashAnnotations(np *v1.NodePool) map[string]string {
	return map[string]string{
		v1.NodePoolHashAnnotationKey:        np.Hash(),
		v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion,
	}
}

// HashController keeps the hash annotations on NodePools, and re-stamps
// NodeClaims that carry a different hash version.
type HashController struct {
	kubeClient client.Client
}

// NewHashController returns the hash controller.
func NewHashController(kubeClient client.Client) *HashController {
	return &HashController{kubeClient: kubeClient}
}

// Reconcile one NodePool.
func (h *HashController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := h.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := HashAnnotations(np)
	if np.Annotations[v1.NodePoolHashAnnotationKey] != want[v1.NodePoolHashAnnotationKey] ||
		np.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		stored := np.DeepCopy()
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		for k, v := range want {
			np.Annotations[k] = v
		}
		if err := h.kubeClient.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	claims := &v1.NodeClaimList{}
	// The cache's own objects (read only): only those to re-stamp are copied.
	if err := h.kubeClient.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	for i := range claims.Items {
		if claims.Items[i].Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion {
			continue
		}
		nc := claims.Items[i].DeepCopy()
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		for k, v := range want {
			nc.Annotations[k] = v
		}
		if err := h.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// Register adds the controller to the manager.
func (h *HashController) Register(mgr manager.Manager) error {
	// The hash follows the spec (generation) and the annotations it writes; status updates
	// (the counter's, on every NodeClaim change) would list the pool's NodeClaims each time.
	return builder.ControllerManagedBy(mgr).Named("nodepool.hash").
		For(&v1.NodePool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(h)
}
