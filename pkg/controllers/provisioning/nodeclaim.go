package provisioning

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// NodePoolHashVersion is the version of the hashing scheme. Hashes are only
// compared between objects carrying the same version. It is deliberately not
// upstream's "v3": our hash is computed differently, so a NodeClaim stamped by
// upstream Karpenter must read as "another version" (and be re-stamped by the
// NodePool hash controller) rather than as drifted, which would replace every
// node of a cluster that switches over.
const NodePoolHashVersion = "kgo-v1"

// NodePoolHash hashes the parts of a NodePool's template that, when changed, make
// existing NodeClaims stale (static drift): labels, annotations, taints, startup
// taints, NodeClass reference, terminationGracePeriod and expireAfter. Requirements
// are excluded (upstream's hash:"ignore"): they drift by compatibility, not by hash.
// Taints are hashed as sets, so reordering them is not a change.
func NodePoolHash(np *v1.NodePool) string {
	t := np.Spec.Template
	type hashed struct {
		Labels                 map[string]string      `json:"l,omitempty"`
		Annotations            map[string]string      `json:"a,omitempty"`
		Taints                 []corev1.Taint         `json:"t,omitempty"`
		StartupTaints          []corev1.Taint         `json:"s,omitempty"`
		NodeClassRef           *v1.NodeClassReference `json:"n,omitempty"`
		TerminationGracePeriod *metav1.Duration       `json:"g,omitempty"`
		ExpireAfter            v1.NillableDuration    `json:"e"`
	}
	h := hashed{
		Labels: t.ObjectMeta.Labels, Annotations: t.ObjectMeta.Annotations,
		Taints: sortedTaints(t.Spec.Taints), StartupTaints: sortedTaints(t.Spec.StartupTaints),
		NodeClassRef: t.Spec.NodeClassRef, TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		ExpireAfter: t.Spec.ExpireAfter,
	}
	// encoding/json sorts map keys, which makes the encoding canonical.
	b, _ := json.Marshal(h)
	f := fnv.New64a()
	_, _ = f.Write(b)
	return strconv.FormatUint(f.Sum64(), 10)
}

func sortedTaints(in []corev1.Taint) []corev1.Taint {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Taint, 0, len(in))
	for _, t := range in {
		t.TimeAdded = nil
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		if out[i].Effect != out[j].Effect {
			return out[i].Effect < out[j].Effect
		}
		return out[i].Value < out[j].Value
	})
	return out
}

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
	annotations[v1.NodePoolHashAnnotationKey] = NodePoolHash(np)
	annotations[v1.NodePoolHashVersionAnnotationKey] = NodePoolHashVersion
	if c.MinValuesRelaxed {
		annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] = "true"
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
