package v1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHashValuesArePinned: NodeClaims in running clusters carry these hashes.
// A change of value without a new NodePoolHashVersion would mark every node of
// every NodePool drifted at once; the figures were computed by the hash as it
// was when it lived in the provisioner.
func TestHashValuesArePinned(t *testing.T) {
	full := &NodePool{Spec: NodePoolSpec{Template: NodeClaimTemplate{
		ObjectMeta: ObjectMeta{Labels: map[string]string{"team": "blue", "a": "b"}, Annotations: map[string]string{"x": "y"}},
		Spec: NodeClaimTemplateSpec{
			Taints:                 []corev1.Taint{{Key: "k2", Value: "v", Effect: corev1.TaintEffectNoSchedule}, {Key: "k1", Effect: corev1.TaintEffectNoExecute}},
			StartupTaints:          []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoSchedule}},
			NodeClassRef:           &NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			TerminationGracePeriod: &metav1.Duration{Duration: time.Hour},
			ExpireAfter:            MustParseNillableDuration("720h"),
		},
	}}}
	for name, tc := range map[string]struct {
		np   *NodePool
		want string
	}{
		"empty": {&NodePool{}, "12818338260145821114"},
		"full":  {full, "14195961107488504687"},
	} {
		if got := tc.np.Hash(); got != tc.want {
			t.Errorf("%s: hash %s, want %s", name, got, tc.want)
		}
	}
	if NodePoolHashVersion != "kgo-v1" {
		t.Errorf("NodePoolHashVersion %q, want kgo-v1", NodePoolHashVersion)
	}
}
