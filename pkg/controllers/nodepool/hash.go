package nodepool

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// HashVersion is the value of karpenter.sh/nodepool-hash-version written by
// this implementation. It deliberately differs from upstream's ("v3"): the
// hash function is our own, and a NodeClaim stamped by another version is
// re-stamped instead of being considered drifted, so switching from upstream
// Karpenter does not replace every node.
const HashVersion = "karpenter-go-v1"

// hashedTemplate is what the hash covers: the NodeClaim template minus the
// fields that do not cause drift when changed (requirements, which drift
// checks separately against node labels).
type hashedTemplate struct {
	Labels                 map[string]string      `json:"labels,omitempty"`
	Annotations            map[string]string      `json:"annotations,omitempty"`
	Taints                 []corev1.Taint         `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint         `json:"startupTaints,omitempty"`
	NodeClassRef           *v1.NodeClassReference `json:"nodeClassRef,omitempty"`
	TerminationGracePeriod *metav1.Duration       `json:"terminationGracePeriod,omitempty"`
	ExpireAfter            string                 `json:"expireAfter,omitempty"`
}

// Hash returns the hash of the NodePool's template. Taint order does not
// matter; map keys are encoded sorted.
func Hash(np *v1.NodePool) string {
	t := np.Spec.Template
	h := hashedTemplate{
		Labels:                 t.ObjectMeta.Labels,
		Annotations:            t.ObjectMeta.Annotations,
		Taints:                 sortedTaints(t.Spec.Taints),
		StartupTaints:          sortedTaints(t.Spec.StartupTaints),
		NodeClassRef:           t.Spec.NodeClassRef,
		TerminationGracePeriod: t.Spec.TerminationGracePeriod,
	}
	if b, err := json.Marshal(t.Spec.ExpireAfter); err == nil {
		h.ExpireAfter = string(b)
	}
	b, err := json.Marshal(h)
	if err != nil {
		// Every field is plain data; Marshal cannot fail on it.
		panic(err)
	}
	f := fnv.New64a()
	_, _ = f.Write(b)
	return strconv.FormatUint(f.Sum64(), 10)
}

// HashAnnotations are the annotations a new NodeClaim of the NodePool carries.
func HashAnnotations(np *v1.NodePool) map[string]string {
	return map[string]string{
		v1.NodePoolHashAnnotationKey:        Hash(np),
		v1.NodePoolHashVersionAnnotationKey: HashVersion,
	}
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

// HashController keeps the hash annotations on NodePools, and re-stamps
// NodeClaims that carry a different hash version.
type HashController struct {
	kubeClient client.Client
}

// NewHashController returns the hash controller.
func NewHashController(kubeClient client.Client) *HashController {
	return &HashController{kubeClient: kubeClient}
}

// Reconcile one NodePool.
func (h *HashController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := h.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := HashAnnotations(np)
	if np.Annotations[v1.NodePoolHashAnnotationKey] != want[v1.NodePoolHashAnnotationKey] ||
		np.Annotations[v1.NodePoolHashVersionAnnotationKey] != HashVersion {
		stored := np.DeepCopy()
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		for k, v := range want {
			np.Annotations[k] = v
		}
		if err := h.kubeClient.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	claims := &v1.NodeClaimList{}
	if err := h.kubeClient.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		return reconcile.Result{}, err
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] == HashVersion {
			continue
		}
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		for k, v := range want {
			nc.Annotations[k] = v
		}
		if err := h.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// Register adds the controller to the manager.
func (h *HashController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("nodepool.hash").For(&v1.NodePool{}).Complete(h)
}
