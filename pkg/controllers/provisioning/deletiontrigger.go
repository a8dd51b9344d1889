package provisioning

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// DeletionTrigger asks for a provisioning decision as soon as a NodeClaim
// starts being deleted, whoever deleted it (an interruption message, kubectl,
// expiration, a Node deleted directly). The decision provisions for the pods
// of the deleting node (Cluster.PodsOnDeletingCapacity) while its drain is
// still going, so that their replacement capacity is launching before, not
// after, they are evicted. Without it nothing asks until the evicted pods
// turn pending, and a spot node's two minutes are spent waiting for the
// kube-scheduler to give up on them. (The disruption controller launches its
// replacements itself, before deleting.)
type DeletionTrigger struct {
	kube    client.Reader
	batcher *Batcher
}

// NewDeletionTrigger returns the trigger feeding b.
func NewDeletionTrigger(kube client.Reader, b *Batcher) *DeletionTrigger {
	return &DeletionTrigger{kube: kube, batcher: b}
}

// Reconcile triggers a batch for a NodeClaim being deleted.
func (t *DeletionTrigger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := t.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if nc.DeletionTimestamp != nil {
		t.batcher.Trigger(nc.UID)
	}
	return reconcile.Result{}, nil
}

// Register watches NodeClaims, passing only the moment deletion starts (and
// NodeClaims already deleting when the cache fills, after a restart).
func (t *DeletionTrigger) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("provisioner.trigger.nodeclaim").
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return e.Object.GetDeletionTimestamp() != nil },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
			},
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(t)
}
