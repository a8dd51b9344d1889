package provisioning

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
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
//
// It triggers from the watch event itself, not from a later read: a
// NodeClaim whose finalizer goes quickly may be gone from the cache by then.
type DeletionTrigger struct {
	batcher *Batcher
}

// NewDeletionTrigger returns the trigger feeding b.
func NewDeletionTrigger(b *Batcher) *DeletionTrigger {
	return &DeletionTrigger{batcher: b}
}

// Observe triggers a batch when nc is being deleted; the watch calls it for
// NodeClaims that start being deleted, and for those already deleting when
// the cache fills (after a restart).
func (t *DeletionTrigger) Observe(nc client.Object) {
	if nc.GetDeletionTimestamp() != nil {
		t.batcher.Trigger(nc.GetUID())
	}
}

// Register watches NodeClaims.
func (t *DeletionTrigger) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("provisioner.trigger.nodeclaim").
		Watches(&v1.NodeClaim{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				t.Observe(e.Object)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if e.ObjectOld.GetDeletionTimestamp() == nil {
					t.Observe(e.ObjectNew)
				}
			},
		}).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
}
