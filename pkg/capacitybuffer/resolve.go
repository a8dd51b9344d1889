package capacitybuffer

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
)

// Resolve finds the buffer's chunk and fills its status (replicas,
// podTemplateRef, podTemplateGeneration and the ReadyForProvisioning
// condition), as the buffer controller writes it. It returns the
// chunk's template when the buffer is ReadyForProvisioning, and an error only
// for failures worth retrying (not for a missing or unsupported reference,
// which the condition reports and a watch or the resync brings back).
func Resolve(ctx context.Context, kube client.Reader, b *autoscalingv1beta1.CapacityBuffer) (*corev1.PodTemplateSpec, error) {
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
		if err := kube.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.PodTemplateRef.Name}, pt); err != nil {
			if apierrors.IsNotFound(err) {
				notReady(ReasonPodTemplateNotFound, fmt.Sprintf("spec.podTemplateRef: PodTemplate %s/%s not found", b.Namespace, b.Spec.PodTemplateRef.Name))
				return nil, nil
			}
			notReady(ReasonResolutionFailed, fmt.Sprintf("spec.podTemplateRef: getting PodTemplate %s/%s: %v", b.Namespace, b.Spec.PodTemplateRef.Name, err))
			return nil, err
		}
		tmpl = pt.Template
		b.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: pt.Name}
		b.Status.PodTemplateGeneration = ptr(pt.Generation)
	case b.Spec.ScalableRef != nil:
		t, replicas, err := workload(ctx, kube, b.Namespace, b.Spec.ScalableRef)
		ref := b.Spec.ScalableRef
		var unsupported unsupportedError
		switch {
		case apierrors.IsNotFound(err):
			notReady(ReasonScalableRefNotFound, fmt.Sprintf("spec.scalableRef: %s %s/%s not found", ref.Kind, b.Namespace, ref.Name))
			return nil, nil
		case errors.As(err, &unsupported):
			notReady(ReasonResolutionFailed, "spec.scalableRef: "+err.Error())
			return nil, nil
		case err != nil:
			notReady(ReasonResolutionFailed, fmt.Sprintf("spec.scalableRef: getting %s %s/%s: %v", ref.Kind, b.Namespace, ref.Name, err))
			return nil, err
		}
		tmpl, scalable = t, &replicas
		b.Status.PodTemplateRef = nil
		b.Status.PodTemplateGeneration = nil
	default:
		notReady(ReasonResolutionFailed, "neither spec.podTemplateRef nor spec.scalableRef is set")
		return nil, nil
	}
	b.Status.Replicas = ptr(Replicas(b.Spec, &tmpl.Spec, scalable))
	apimeta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: autoscalingv1beta1.ConditionReadyForProvisioning,
		Status: metav1.ConditionTrue, Reason: ReasonResolved, Message: "the chunk's pod template is resolved", ObservedGeneration: b.Generation})
	return &tmpl, nil
}

type unsupportedError struct{ msg string }

func (e unsupportedError) Error() string { return e.msg }

// workload reads the pod template and replica count (1 when unset, as the API
// defaults it) of the workload a scalableRef names.
func workload(ctx context.Context, kube client.Reader, namespace string, ref *autoscalingv1beta1.ScalableRef) (corev1.PodTemplateSpec, int32, error) {
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
		err := kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	case autoscalingv1beta1.KindStatefulSet:
		o := &appsv1.StatefulSet{}
		err := kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	case autoscalingv1beta1.KindReplicaSet:
		o := &appsv1.ReplicaSet{}
		err := kube.Get(ctx, key, o)
		return o.Spec.Template, replicas(o.Spec.Replicas), err
	}
	return corev1.PodTemplateSpec{}, 0, unsupportedError{fmt.Sprintf("kind %q is not supported: name a Deployment, StatefulSet or ReplicaSet", ref.Kind)}
}
