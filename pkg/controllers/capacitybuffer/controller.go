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
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	tmpl, retry := c.resolve(ctx, b)
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

// resolve finds the buffer's chunk and fills its status. It returns the
// chunk's template when the buffer is ReadyForProvisioning, and an error only
// for failures worth retrying (not for a missing or unsupported reference,
// which the condition reports and a watch or the resync brings back).
func (c *Controller) resolve(ctx context.Context, b *autoscalingv1beta1.CapacityBuffer) (*corev1.PodTemplateSpec, error) {
	notReady := func(reason, msg string) {
		apimeta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: autoscalingv1beta1.ConditionReadyForProvisioning,
			Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: b.Generation})
	}
	var (
		tmpl     corev1.PodTemplateSpec
		scalable *int32
	)
	switch {
	case b.Spec.PodTemplateRef != nil:
		pt := &corev1.PodTemplate{}
		if err := c.kube.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.PodTemplateRef.Name}, pt); err != nil {
			if apierrors.IsNotFound(err) {
				notReady(capacitybuffer.ReasonPodTemplateNotFound, fmt.Sprintf("spec.podTemplateRef: PodTemplate %s/%s not found", b.Namespace, b.Spec.PodTemplateRef.Name))
				return nil, nil
			}
			notReady(capacitybuffer.ReasonResolutionFailed, fmt.Sprintf("spec.podTemplateRef: getting PodTemplate %s/%s: %v", b.Namespace, b.Spec.PodTemplateRef.Name, err))
			return nil, err
		}
		tmpl = pt.Template
		b.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: pt.Name}
		b.Status.PodTemplateGeneration = ptr(pt.Generation)
	case b.Spec.ScalableRef != nil:
		t, replicas, err := c.workload(ctx, b.Namespace, b.Spec.ScalableRef)
		ref := b.Spec.ScalableRef
		var unsupported unsupportedError
		switch {
		case apierrors.IsNotFound(err):
			notReady(capacitybuffer.ReasonScalableRefNotFound, fmt.Sprintf("spec.scalableRef: %s %s/%s not found", ref.Kind, b.Namespace, ref.Name))
			return nil, nil
		case errors.As(err, &unsupported):
			notReady(capacitybuffer.ReasonResolutionFailed, "spec.scalableRef: "+err.Error())
			return nil, nil
		case err != nil:
			notReady(capacitybuffer.ReasonResolutionFailed, fmt.Sprintf("spec.scalableRef: getting %s %s/%s: %v", ref.Kind, b.Namespace, ref.Name, err))
			return nil, err
		}
		tmpl, scalable = t, &replicas
		b.Status.PodTemplateRef = nil
		b.Status.PodTemplateGeneration = nil
	default:
		notReady(capacitybuffer.ReasonResolutionFailed, "neither spec.podTemplateRef nor spec.scalableRef is set")
		return nil, nil
	}
	b.Status.Replicas = ptr(capacitybuffer.Replicas(b.Spec, &tmpl.Spec, scalable))
	apimeta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: autoscalingv1beta1.ConditionReadyForProvisioning,
		Status: metav1.ConditionTrue, Reason: capacitybuffer.ReasonResolved, Message: "the chunk's pod template is resolved", ObservedGeneration: b.Generation})
	return &tmpl, nil
}

type unsupportedError struct{ msg string }

func (e unsupportedError) Error() string { return e.msg }

// workload reads the pod template and replica count (1 when unset, as the API
// defaults it) of the workload a scalableRef names.
func (c *Controller) workload(ctx context.Context, namespace string, ref *autoscalingv1beta1.ScalableRef) (corev1.PodTemplateSpec, int32, error) {
	if ref.APIGroup != "" && ref.APIGroup != appsv1.GroupName {
		return corev1.PodTemplateSpec{}, 0, unsupportedError{fmt.Sprintf("apiGroup %q is not supported: name a Deployment, StatefulSet or ReplicaSet of the apps group", ref.APIGroup)}
	}
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	replicas := func(r *int32) int32 {
		if r == nil {
			return 1
		}
		return *r
	}
	switch ref.Kind {
	case autoscalingv1beta1.KindDeployment:
		o := &appsv1.Deployment{}
		err := c.kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	case autoscalingv1beta1.KindStatefulSet:
		o := &appsv1.StatefulSet{}
		err := c.kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	case autoscalingv1beta1.KindReplicaSet:
		o := &appsv1.ReplicaSet{}
		err := c.kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	}
	return corev1.PodTemplateSpec{}, 0, unsupportedError{fmt.Sprintf("kind %q is not supported: name a Deployment, StatefulSet or ReplicaSet", ref.Kind)}
}

func ptr[T any](v T) *T { return &v }

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
