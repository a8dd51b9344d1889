package provisioning

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// nodeClassLabel is the label naming a NodePool's NodeClass (e.g.
// karpenter.kwok.sh/kwoknodeclass: default), which upstream puts on every
// NodeClaim and node so that pods and metrics can select by NodeClass.
func nodeClassLabel(np *v1.NodePool) (string, string, bool) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Kind == "" {
		return "", "", false
	}
	return v1.NodeClassLabelKey(schema.GroupKind{Group: ref.Group, Kind: ref.Kind}), ref.Name, true
}

// NewNodeClaim turns a solver claim into the NodeClaim to create: the NodePool
// template's labels, annotations, taints and NodeClass; the karpenter.sh/nodepool
// label; the hash annotations; the NodePool as owner (so deleting the NodePool
// deletes its NodeClaims); the termination finalizer (so the instance is removed
// before the object goes away); the requirements the solver narrowed, including the
// instance types it kept, cheapest first; and the resources requested by the pods
// plus the DaemonSet overhead.
func NewNodeClaim(np *v1.NodePool, c *scheduling.NewClaim) *v1.NodeClaim {
	tmpl := np.Spec.Template
	labels := map[string]string{}
	for k, v := range tmpl.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[v1.NodePoolLabelKey] = np.Name
	if k, v, ok := nodeClassLabel(np); ok {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range tmpl.ObjectMeta.Annotations {
		annotations[k] = v
	}
	annotations[v1.NodePoolHashAnnotationKey] = np.Hash()
	annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	if c.MinValuesRelaxed {
		annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] = "true"
	}
	if np.Spec.Replicas == nil {
		// As upstream, a static NodePool's NodeClaims are not marked.
		price, capacity := overlaid(c.InstanceTypes)
		if price {
			annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] = "true"
		}
		if capacity {
			annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] = "true"
		}
	}
	requests := corev1.ResourceList{}
	for _, l := range []corev1.ResourceList{c.Requests, c.DaemonSetOverhead} {
		for n, q := range l {
			cur := requests[n]
			cur.Add(q)
			requests[n] = cur
		}
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			Finalizers:   []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               np.Name,
				UID:                np.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           claimRequirements(c),
			Resources:              v1.ResourceRequirements{Requests: requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
		},
	}
}

// overlaid reports whether a NodeOverlay set the price of an offering of
// one of its, and whether one added capacity to one of them.
func overlaid(its []*scheduling.InstanceType) (price, capacity bool) {
	for _, it := range its {
		capacity = capacity || it.CapacityOverlaid
		for i := range it.Offerings {
			price = price || it.Offerings[i].PriceOverlaid
		}
	}
	return price, capacity
}

// claimRequirements renders the solver's requirements in API form. The hostname
// key is dropped: the solver uses it as a placeholder for topology, the API
// rejects it, and the node's real hostname comes from the provider. Instance
// types keep the solver's order (cheapest first) so a provider can launch the first
// one that is available.
func claimRequirements(c *scheduling.NewClaim) []v1.NodeSelectorRequirementWithMinValues {
	rs := c.Requirements
	minValues := map[string]*int{}
	for _, r := range rs.All() {
		if r.MinValues != nil {
			minValues[r.Key] = r.MinValues
		}
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	for _, r := range rs.NodeSelectorRequirements() {
		if r.Key == corev1.LabelHostname {
			continue
		}
		req := v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn && len(c.InstanceTypes) == len(r.Values) {
			// Requirements keep values sorted by name; the claim's list is by price.
			req.Values = make([]string, len(c.InstanceTypes))
			for i, it := range c.InstanceTypes {
				req.Values[i] = it.Name
			}
		}
		if mv, ok := minValues[r.Key]; ok && r.Operator == corev1.NodeSelectorOpIn {
			req.MinValues = ptr.To(*mv)
		}
		out = append(out, req)
	}
	return out
}
