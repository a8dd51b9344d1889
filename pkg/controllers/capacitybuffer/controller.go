// Package capacitybuffer resolves CapacityBuffers (autoscaling.x-k8s.io/v1beta1,
// gate CapacityBuffer) as upstream's buffer controller does: it finds the shape
// of a chunk (spec.podTemplateRef's PodTemplate, or spec.scalableRef's
// Deployment, StatefulSet or ReplicaSet), counts the chunks (spec.replicas,
// spec.percentage of the workload's replicas, spec.limits; see
// capacitybuffer.Replicas), writes status (replicas, podTemplateRef,
// podTemplateGeneration, provisioningStrategy and the ReadyForProvisioning
// condition), keeps the resolved buffer in the store the provisioner reads
// its virtual pods from, and wakes the provisioner. The provisioner writes the
// Provisioning condition after each decision.
package capacitybuffer

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
)

// Resync is how often a buffer is resolved again (and the provisioner woken)
// when nothing it watches changed, as upstream's controller requeues: the
// provisioner then notices room a pod took from a buffer.
const Resync = 30 * time.Second

// Trigger wakes the provisioner (Provisioner.Trigger).
type Trigger func(uid types.UID)

// Controller reconciles CapacityBuffers.
type Controller struct {
	kube    client.Client
	store   *capacitybuffer.Store
	trigger Trigger
}

// NewController returns the controller; store is the provisioner's.
func NewController(kube client.Client, store *capacitybuffer.Store, trigger Trigger) *Controller {
	return &Controller{kube: kube, store: store, trigger: trigger}
}

// Reconcile resolves one buffer.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.kube.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: its room is no longer kept once the provisioner decides again.
			if c.store.Delete(req.NamespacedName) {
				c.trigger(types.UID("capacitybuffer/" + req.String()))
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	stored := b.DeepCopy()
	tmpl, retry := capacitybuffer.Resolve(ctx, c.kube, b)
	b.Status.ProvisioningStrategy = b.Spec.ProvisioningStrategy
	if !equality.Semantic.DeepEqual(stored.Status, b.Status) {
		if err := c.kube.Status().Patch(ctx, b, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching capacitybuffer status: %w", err)
		}
	}
	if retry != nil {
		c.store.Delete(req.NamespacedName)
		return reconcile.Result{}, retry
	}
	if tmpl != nil {
		c.store.Set(b, *tmpl)
	} else {
		c.store.Delete(req.NamespacedName)
	}
	c.trigger(b.UID)
	return reconcile.Result{RequeueAfter: Resync}, nil
}

// Index names: buffers by the PodTemplate and by the workload they name.
const (
	podTemplateIndex = "capacitybuffer.spec.podTemplateRef.name"
	workloadIndex    = "capacitybuffer.spec.scalableRef"
)

func workloadKey(kind, name string) string { return kind + "/" + name }

// Register adds the controller and its indexes to mgr: a buffer is resolved
// again when it changes, when its PodTemplate changes, and when the spec of
// the workload it names changes (its generation: replicas and template).
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &autoscalingv1beta1.CapacityBuffer{}, podTemplateIndex, func(o client.Object) []string {
		if ref := o.(*autoscalingv1beta1.CapacityBuffer).Spec.PodTemplateRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing capacitybuffers by podTemplateRef: %w", err)
	}
	if err := idx.IndexField(ctx, &autoscalingv1beta1.CapacityBuffer{}, workloadIndex, func(o client.Object) []string {
		if ref := o.(*autoscalingv1beta1.CapacityBuffer).Spec.ScalableRef; ref != nil && (ref.APIGroup == "" || ref.APIGroup == appsv1.GroupName) {
			return []string{workloadKey(ref.Kind, ref.Name)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing capacitybuffers by scalableRef: %w", err)
	}
	byWorkload := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.matching(ctx, o.GetNamespace(), workloadIndex, workloadKey(kind, o.GetName()))
		})
	}
	return builder.ControllerManagedBy(mgr).
		Named("capacitybuffer").
		For(&autoscalingv1beta1.CapacityBuffer{}).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.matching(ctx, o.GetNamespace(), podTemplateIndex, o.GetName())
		})).
		Watches(&appsv1.Deployment{}, byWorkload(autoscalingv1beta1.KindDeployment), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.StatefulSet{}, byWorkload(autoscalingv1beta1.KindStatefulSet), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.ReplicaSet{}, byWorkload(autoscalingv1beta1.KindReplicaSet), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

func (c *Controller) matching(ctx context.Context, namespace, index, value string) []reconcile.Request {
	list := &autoscalingv1beta1.CapacityBufferList{}
	if err := c.kube.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index: value}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return out
}
