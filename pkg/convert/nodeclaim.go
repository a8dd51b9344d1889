package convert

import (
	"encoding/json"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
)

// DefaultExpireAfter is the expireAfter of a v1 NodeClaim converted from a
// v1beta1 one whose NodePool is unknown: the schema default of both versions.
const DefaultExpireAfter = "720h"

// NodeClaimV1beta1ToV1 converts a v1beta1 NodeClaim to v1. The nodeClassRef
// and kubelet are handled as for NodePools. A v1beta1 NodeClaim has no
// expireAfter of its own (it followed its NodePool's disruption.expireAfter);
// the v1 NodeClaim gets the value kept in the v1-fields annotation if any,
// else the default 720h. Use NodeClaimV1beta1ToV1WithNodePool when the owning
// NodePool is at hand. It is pure: the input is not modified.
func NodeClaimV1beta1ToV1(in *v1beta1.NodeClaim) (*v1.NodeClaim, error) {
	return NodeClaimV1beta1ToV1WithNodePool(in, nil)
}

// NodeClaimV1beta1ToV1WithNodePool is NodeClaimV1beta1ToV1 taking expireAfter
// from the owning NodePool (label karpenter.sh/nodepool) when the NodeClaim
// does not carry its own, as the v1beta1 controller would have applied it.
func NodeClaimV1beta1ToV1WithNodePool(in *v1beta1.NodeClaim, nodePool *v1.NodePool) (*v1.NodeClaim, error) {
	if in == nil {
		return nil, nil
	}
	out := &v1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	extra, err := popV1OnlyFields(&out.ObjectMeta)
	if err != nil {
		return nil, err
	}
	s := &in.Spec
	out.Spec = v1.NodeClaimSpec{
		Taints:                 copyTaints(s.Taints),
		StartupTaints:          copyTaints(s.StartupTaints),
		Requirements:           copyRequirements(s.Requirements),
		Resources:              v1.ResourceRequirements{Requests: s.Resources.Requests.DeepCopy()},
		TerminationGracePeriod: extra.TerminationGracePeriod.DeepCopy(),
	}
	switch {
	case extra.ExpireAfter != nil:
		out.Spec.ExpireAfter = copyDuration(*extra.ExpireAfter)
	case nodePool != nil && !nodePool.Spec.Template.Spec.ExpireAfter.IsZero():
		out.Spec.ExpireAfter = copyDuration(nodePool.Spec.Template.Spec.ExpireAfter)
	default:
		out.Spec.ExpireAfter = v1.MustParseNillableDuration(DefaultExpireAfter)
	}
	ref, refAnnotation, err := nodeClassRefToV1(s.NodeClassRef)
	if err != nil {
		return nil, err
	}
	out.Spec.NodeClassRef = ref
	setAnnotation(&out.ObjectMeta, v1.NodeClassReferenceAnnotationKey, refAnnotation)
	kubelet, err := kubeletAnnotation(s.Kubelet)
	if err != nil {
		return nil, err
	}
	setAnnotation(&out.ObjectMeta, v1.KubeletCompatibilityAnnotationKey, kubelet)

	out.Status = v1.NodeClaimStatus{
		NodeName:    in.Status.NodeName,
		ProviderID:  in.Status.ProviderID,
		ImageID:     in.Status.ImageID,
		Capacity:    in.Status.Capacity.DeepCopy(),
		Allocatable: in.Status.Allocatable.DeepCopy(),
		Conditions:  copyConditions(in.Status.Conditions),
	}
	if extra.LastPodEventTime != nil {
		out.Status.LastPodEventTime = *extra.LastPodEventTime.DeepCopy()
	}
	return out, nil
}

// NodeClaimV1ToV1beta1 converts a v1 NodeClaim to v1beta1, the inverse of
// NodeClaimV1beta1ToV1. expireAfter, terminationGracePeriod and
// status.lastPodEventTime, which v1beta1 NodeClaims lack, travel in the
// v1-fields annotation (expireAfter only when it differs from the 720h default).
func NodeClaimV1ToV1beta1(in *v1.NodeClaim) (*v1beta1.NodeClaim, error) {
	if in == nil {
		return nil, nil
	}
	out := &v1beta1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	kubeletJSON, hasKubelet := popAnnotation(out.Annotations, v1.KubeletCompatibilityAnnotationKey)
	refJSON, _ := popAnnotation(out.Annotations, v1.NodeClassReferenceAnnotationKey)
	out.Annotations = nilIfEmpty(out.Annotations)

	s := &in.Spec
	out.Spec = v1beta1.NodeClaimSpec{
		Taints:        copyTaints(s.Taints),
		StartupTaints: copyTaints(s.StartupTaints),
		Requirements:  copyRequirements(s.Requirements),
		Resources:     v1beta1.ResourceRequirements{Requests: s.Resources.Requests.DeepCopy()},
	}
	ref, err := nodeClassRefToV1beta1(s.NodeClassRef, refJSON)
	if err != nil {
		return nil, err
	}
	out.Spec.NodeClassRef = ref
	if hasKubelet {
		k := &v1beta1.KubeletConfiguration{}
		if err := json.Unmarshal([]byte(kubeletJSON), k); err != nil {
			return nil, fmt.Errorf("parsing annotation %s: %w", v1.KubeletCompatibilityAnnotationKey, err)
		}
		out.Spec.Kubelet = k
	}
	extra := v1OnlyFields{TerminationGracePeriod: s.TerminationGracePeriod.DeepCopy()}
	if !reflect.DeepEqual(s.ExpireAfter, v1.MustParseNillableDuration(DefaultExpireAfter)) {
		e := copyDuration(s.ExpireAfter)
		extra.ExpireAfter = &e
	}
	if !in.Status.LastPodEventTime.IsZero() {
		extra.LastPodEventTime = in.Status.LastPodEventTime.DeepCopy()
	}
	out.Status = v1beta1.NodeClaimStatus{
		NodeName:    in.Status.NodeName,
		ProviderID:  in.Status.ProviderID,
		ImageID:     in.Status.ImageID,
		Capacity:    in.Status.Capacity.DeepCopy(),
		Allocatable: in.Status.Allocatable.DeepCopy(),
		Conditions:  copyConditions(in.Status.Conditions),
	}
	if err := pushV1OnlyFields(&out.ObjectMeta, extra); err != nil {
		return nil, err
	}
	return out, nil
}
