package v1

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolHashVersion is the version of the NodePool hashing scheme, written
// next to the hash (NodePoolHashVersionAnnotationKey). Hashes are only compared
// between objects carrying the same version. It is deliberately not upstream's
// "v3": our hash is computed differently, so a NodeClaim stamped by upstream
// Karpenter must read as "another version" (and be re-stamped by the NodePool
// hash controller) rather than as drifted, which would replace every node of a
// cluster that switches over.
const NodePoolHashVersion = "kgo-v1"

// Hash hashes the parts of the NodePool's template that, when changed, make
// existing NodeClaims stale (static drift): labels, annotations, taints, startup
// taints, NodeClass reference, terminationGracePeriod and expireAfter.
// Requirements are excluded (upstream's hash:"ignore"): they drift by
// compatibility, not by hash. Taints are hashed as sets, so reordering them is
// not a change. The provisioner stamps new NodeClaims with it, the hash
// controller stamps the NodePool, and drift compares the two.
func (in *NodePool) Hash() string {
	t := in.Spec.Template
	type hashed struct {
		Labels                 map[string]string   `json:"l,omitempty"`
		Annotations            map[string]string   `json:"a,omitempty"`
		Taints                 []corev1.Taint      `json:"t,omitempty"`
		StartupTaints          []corev1.Taint      `json:"s,omitempty"`
		NodeClassRef           *NodeClassReference `json:"n,omitempty"`
		TerminationGracePeriod *metav1.Duration    `json:"g,omitempty"`
		ExpireAfter            NillableDuration    `json:"e"`
	}
	h := hashed{
		Labels: t.ObjectMeta.Labels, Annotations: t.ObjectMeta.Annotations,
		Taints: taintSet(t.Spec.Taints), StartupTaints: taintSet(t.Spec.StartupTaints),
		NodeClassRef: t.Spec.NodeClassRef, TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		ExpireAfter: t.Spec.ExpireAfter,
	}
	// encoding/json sorts map keys, which makes the encoding canonical.
	b, _ := json.Marshal(h)
	f := fnv.New64a()
	_, _ = f.Write(b)
	return strconv.FormatUint(f.Sum64(), 10)
}

// taintSet orders taints canonically and drops timeAdded (set by the API
// server, not by the user), so the hash sees a set.
func taintSet(in []corev1.Taint) []corev1.Taint {
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
