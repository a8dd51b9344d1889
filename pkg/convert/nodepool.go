package convert

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
)

// Defaults that v1beta1 NodeClassReferences relied on: before v1, kind and
// apiVersion could be omitted and the AWS provider filled them in.
const (
	DefaultNodeClassGroup = "karpenter.k8s.aws"
	DefaultNodeClassKind  = "EC2NodeClass"
)

// nodeClassVersions is the version a v1beta1 object names for a NodeClass
// group when its v1 reference carries only the group.
var nodeClassVersions = map[string]string{
	"karpenter.k8s.aws": "v1beta1",
	"karpenter.kwok.sh": "v1alpha1",
}

// v1OnlyFields are the parts of a v1 NodePool or NodeClaim that v1beta1 has no
// field for. They travel in the V1OnlyFieldsAnnotationKey annotation of the
// v1beta1 object, so a v1beta1 client that reads and writes back an object
// does not erase them.
type v1OnlyFields struct {
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ConsolidateAfter is the v1 value under WhenEmptyOrUnderutilized, which
	// v1beta1 (WhenUnderutilized) cannot express unless it is 0s or Never.
	ConsolidateAfter *v1.NillableDuration `json:"consolidateAfter,omitempty"`
	// BudgetReasons holds each budget's reasons, by index.
	BudgetReasons [][]v1.DisruptionReason `json:"budgetReasons,omitempty"`
	// ExpireAfter is a NodeClaim's own expireAfter (v1beta1 NodeClaims
	// inherited it from their NodePool).
	ExpireAfter *v1.NillableDuration `json:"expireAfter,omitempty"`
	// LastPodEventTime is a NodeClaim's status.lastPodEventTime.
	LastPodEventTime *metav1.Time `json:"lastPodEventTime,omitempty"`
	// Replicas is a static NodePool's spec.replicas.
	Replicas *int64 `json:"replicas,omitempty"`
	// ConsolidationPolicy is a v1 policy v1beta1 has no value for (Balanced);
	// the v1beta1 object shows WhenEmpty, the subset of it v1beta1 can say.
	ConsolidationPolicy v1.ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
}

func (f v1OnlyFields) empty() bool { return reflect.DeepEqual(f, v1OnlyFields{}) }

// NodePoolV1beta1ToV1 converts a v1beta1 NodePool to v1:
//   - spec.disruption.expireAfter moves to spec.template.spec.expireAfter;
//   - WhenUnderutilized becomes WhenEmptyOrUnderutilized with consolidateAfter 0s
//     (or the consolidateAfter v1 had, kept in the v1-fields annotation);
//   - nodeClassRef {apiVersion, kind, name} becomes {group, kind, name}, with
//     the provider defaults for omitted parts; when the v1beta1 spelling cannot
//     be derived back from the v1 one it is kept in the
//     compatibility.karpenter.sh/v1beta1-nodeclass-reference annotation;
//   - spec.template.spec.kubelet, which v1 moved to the NodeClass, is kept as
//     JSON in the compatibility.karpenter.sh/v1beta1-kubelet-conversion
//     annotation, where the provider still honours it;
//   - fields only v1 has (terminationGracePeriod, budget reasons) are restored
//     from the v1-fields annotation written by NodePoolV1ToV1beta1.
//
// It is pure: the input is not modified.
func NodePoolV1beta1ToV1(in *v1beta1.NodePool) (*v1.NodePool, error) {
	if in == nil {
		return nil, nil
	}
	out := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	extra, err := popV1OnlyFields(&out.ObjectMeta)
	if err != nil {
		return nil, err
	}
	s, t := &in.Spec, &in.Spec.Template.Spec
	o := &out.Spec
	o.Template.ObjectMeta = *s.Template.ObjectMeta.DeepCopy()
	o.Template.Spec = v1.NodeClaimTemplateSpec{
		Taints:                 copyTaints(t.Taints),
		StartupTaints:          copyTaints(t.StartupTaints),
		Requirements:           copyRequirements(t.Requirements),
		ExpireAfter:            copyDuration(s.Disruption.ExpireAfter),
		TerminationGracePeriod: extra.TerminationGracePeriod.DeepCopy(),
	}
	ref, refAnnotation, err := nodeClassRefToV1(t.NodeClassRef)
	if err != nil {
		return nil, err
	}
	o.Template.Spec.NodeClassRef = ref
	setAnnotation(&out.ObjectMeta, v1.NodeClassReferenceAnnotationKey, refAnnotation)
	kubelet, err := kubeletAnnotation(t.Kubelet)
	if err != nil {
		return nil, err
	}
	setAnnotation(&out.ObjectMeta, v1.KubeletCompatibilityAnnotationKey, kubelet)

	o.Disruption = v1.Disruption{Budgets: budgetsToV1(s.Disruption.Budgets, extra.BudgetReasons)}
	switch s.Disruption.ConsolidationPolicy {
	case v1beta1.ConsolidationPolicyWhenUnderutilized:
		o.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		switch {
		case extra.ConsolidateAfter != nil:
			o.Disruption.ConsolidateAfter = copyDuration(*extra.ConsolidateAfter)
		case s.Disruption.ConsolidateAfter != nil:
			o.Disruption.ConsolidateAfter = copyDuration(*s.Disruption.ConsolidateAfter)
		default:
			o.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		}
	default:
		o.Disruption.ConsolidationPolicy = v1.ConsolidationPolicy(s.Disruption.ConsolidationPolicy)
		if s.Disruption.ConsolidateAfter != nil {
			o.Disruption.ConsolidateAfter = copyDuration(*s.Disruption.ConsolidateAfter)
		}
		if extra.ConsolidationPolicy != "" && s.Disruption.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenEmpty {
			o.Disruption.ConsolidationPolicy = extra.ConsolidationPolicy
		}
	}
	o.Replicas = CopyPtr(extra.Replicas)
	if s.Limits != nil {
		o.Limits = v1.Limits(corev1.ResourceList(s.Limits).DeepCopy())
	}
	o.Weight = CopyPtr(s.Weight)
	out.Status = v1.NodePoolStatus{
		Resources:  in.Status.Resources.DeepCopy(),
		Conditions: copyConditions(in.Status.Conditions),
	}
	return out, nil
}

// NodePoolV1ToV1beta1 converts a v1 NodePool to v1beta1, the inverse of
// NodePoolV1beta1ToV1: WhenEmptyOrUnderutilized becomes WhenUnderutilized
// without consolidateAfter, expireAfter moves back under disruption, the
// kubelet and original nodeClassRef come back from their annotations, and the
// fields v1beta1 lacks go into the v1-fields annotation.
//
// v1 -> v1beta1 -> v1 returns the object unchanged, for v1 objects that carry
// no compatibility annotations other than those conversion itself writes.
func NodePoolV1ToV1beta1(in *v1.NodePool) (*v1beta1.NodePool, error) {
	if in == nil {
		return nil, nil
	}
	out := &v1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	kubeletJSON, hasKubelet := popAnnotation(out.Annotations, v1.KubeletCompatibilityAnnotationKey)
	refJSON, _ := popAnnotation(out.Annotations, v1.NodeClassReferenceAnnotationKey)
	out.Annotations = nilIfEmpty(out.Annotations)

	s, t := &in.Spec, &in.Spec.Template.Spec
	o := &out.Spec
	var extra v1OnlyFields
	o.Template.ObjectMeta = *s.Template.ObjectMeta.DeepCopy()
	o.Template.Spec = v1beta1.NodeClaimSpec{
		Taints:        copyTaints(t.Taints),
		StartupTaints: copyTaints(t.StartupTaints),
		Requirements:  copyRequirements(t.Requirements),
	}
	ref, err := nodeClassRefToV1beta1(t.NodeClassRef, refJSON)
	if err != nil {
		return nil, err
	}
	o.Template.Spec.NodeClassRef = ref
	if hasKubelet {
		k := &v1beta1.KubeletConfiguration{}
		if err := json.Unmarshal([]byte(kubeletJSON), k); err != nil {
			return nil, fmt.Errorf("parsing annotation %s: %w", v1.KubeletCompatibilityAnnotationKey, err)
		}
		o.Template.Spec.Kubelet = k
	}
	extra.TerminationGracePeriod = t.TerminationGracePeriod.DeepCopy()

	o.Disruption.ExpireAfter = copyDuration(t.ExpireAfter)
	o.Disruption.Budgets, extra.BudgetReasons = budgetsToV1beta1(s.Disruption.Budgets)
	switch s.Disruption.ConsolidationPolicy {
	case v1.ConsolidationPolicyWhenEmptyOrUnderutilized:
		o.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
		after := s.Disruption.ConsolidateAfter
		switch {
		case after.IsNever() && !after.IsZero():
			// v1beta1 allows WhenUnderutilized with consolidateAfter: Never.
			c := copyDuration(after)
			o.Disruption.ConsolidateAfter = &c
		case reflect.DeepEqual(after, v1.MustParseNillableDuration("0s")):
			// The v1beta1 meaning of WhenUnderutilized; nothing to keep.
		default:
			c := copyDuration(after)
			extra.ConsolidateAfter = &c
		}
	case v1.ConsolidationPolicyBalanced:
		o.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
		extra.ConsolidationPolicy = s.Disruption.ConsolidationPolicy
		c := copyDuration(s.Disruption.ConsolidateAfter)
		o.Disruption.ConsolidateAfter = &c
	default:
		o.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicy(s.Disruption.ConsolidationPolicy)
		c := copyDuration(s.Disruption.ConsolidateAfter)
		o.Disruption.ConsolidateAfter = &c
	}
	extra.Replicas = CopyPtr(s.Replicas)
	if s.Limits != nil {
		o.Limits = v1beta1.Limits(corev1.ResourceList(s.Limits).DeepCopy())
	}
	o.Weight = CopyPtr(s.Weight)
	out.Status = v1beta1.NodePoolStatus{
		Resources:  in.Status.Resources.DeepCopy(),
		Conditions: copyConditions(in.Status.Conditions),
	}
	if err := pushV1OnlyFields(&out.ObjectMeta, extra); err != nil {
		return nil, err
	}
	return out, nil
}

func budgetsToV1(in []v1beta1.Budget, reasons [][]v1.DisruptionReason) []v1.Budget {
	if in == nil {
		return nil
	}
	out := make([]v1.Budget, len(in))
	for i, b := range in {
		out[i] = v1.Budget{Nodes: b.Nodes, Schedule: CopyPtr(b.Schedule), Duration: b.Duration.DeepCopy()}
		// Reasons only apply when the budget list was not edited in between
		// (same length); otherwise they cannot be matched to budgets.
		if len(reasons) == len(in) && reasons[i] != nil {
			out[i].Reasons = append([]v1.DisruptionReason(nil), reasons[i]...)
		}
	}
	return out
}

func budgetsToV1beta1(in []v1.Budget) ([]v1beta1.Budget, [][]v1.DisruptionReason) {
	if in == nil {
		return nil, nil
	}
	out := make([]v1beta1.Budget, len(in))
	reasons := make([][]v1.DisruptionReason, len(in))
	any := false
	for i, b := range in {
		out[i] = v1beta1.Budget{Nodes: b.Nodes, Schedule: CopyPtr(b.Schedule), Duration: b.Duration.DeepCopy()}
		if b.Reasons != nil {
			reasons[i] = append([]v1.DisruptionReason(nil), b.Reasons...)
			any = true
		}
	}
	if !any {
		reasons = nil
	}
	return out, reasons
}

// nodeClassRefToV1 converts a v1beta1 reference and returns the annotation
// value that preserves the original spelling, or "" when the v1 reference
// converts back to exactly the original.
func nodeClassRefToV1(in *v1beta1.NodeClassReference) (*v1.NodeClassReference, string, error) {
	if in == nil {
		return nil, "", nil
	}
	out := &v1.NodeClassReference{Name: in.Name, Kind: in.Kind, Group: DefaultNodeClassGroup}
	if out.Kind == "" {
		out.Kind = DefaultNodeClassKind
	}
	if in.APIVersion != "" {
		out.Group, _, _ = strings.Cut(in.APIVersion, "/")
	}
	if reflect.DeepEqual(deriveV1beta1Ref(out), in) {
		return out, "", nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, "", err
	}
	return out, string(b), nil
}

// nodeClassRefToV1beta1 restores the original v1beta1 reference from its
// annotation when it still denotes the same NodeClass (a v1 client may have
// renamed it since), and derives one otherwise.
func nodeClassRefToV1beta1(in *v1.NodeClassReference, annotation string) (*v1beta1.NodeClassReference, error) {
	if in == nil {
		return nil, nil
	}
	if annotation != "" {
		orig := &v1beta1.NodeClassReference{}
		if err := json.Unmarshal([]byte(annotation), orig); err != nil {
			return nil, fmt.Errorf("parsing annotation %s: %w", v1.NodeClassReferenceAnnotationKey, err)
		}
		if fwd, _, err := nodeClassRefToV1(orig); err == nil && reflect.DeepEqual(fwd, in) {
			return orig, nil
		}
	}
	return deriveV1beta1Ref(in), nil
}

func deriveV1beta1Ref(in *v1.NodeClassReference) *v1beta1.NodeClassReference {
	out := &v1beta1.NodeClassReference{Name: in.Name, Kind: in.Kind}
	if in.Group != "" {
		version, ok := nodeClassVersions[in.Group]
		if !ok {
			version = "v1"
		}
		out.APIVersion = in.Group + "/" + version
	}
	return out
}

func kubeletAnnotation(k *v1beta1.KubeletConfiguration) (string, error) {
	if k == nil {
		return "", nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("serializing kubelet: %w", err)
	}
	return string(b), nil
}

// popV1OnlyFields removes and parses the v1-fields annotation.
func popV1OnlyFields(meta *metav1.ObjectMeta) (v1OnlyFields, error) {
	var f v1OnlyFields
	raw, ok := popAnnotation(meta.Annotations, v1.V1OnlyFieldsAnnotationKey)
	meta.Annotations = nilIfEmpty(meta.Annotations)
	if !ok {
		return f, nil
	}
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return f, fmt.Errorf("parsing annotation %s: %w", v1.V1OnlyFieldsAnnotationKey, err)
	}
	return f, nil
}

func pushV1OnlyFields(meta *metav1.ObjectMeta, f v1OnlyFields) error {
	if f.empty() {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	setAnnotation(meta, v1.V1OnlyFieldsAnnotationKey, string(b))
	return nil
}

// setAnnotation sets k=v, doing nothing for an empty v.
func setAnnotation(meta *metav1.ObjectMeta, k, v string) {
	if v == "" {
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[k] = v
}

func copyTaints(in []corev1.Taint) []corev1.Taint {
	if in == nil {
		return nil
	}
	out := make([]corev1.Taint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyRequirements(in []v1.NodeSelectorRequirementWithMinValues) []v1.NodeSelectorRequirementWithMinValues {
	if in == nil {
		return nil
	}
	out := make([]v1.NodeSelectorRequirementWithMinValues, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyDuration(in v1.NillableDuration) v1.NillableDuration {
	var out v1.NillableDuration
	in.DeepCopyInto(&out)
	return out
}
