package e2e_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// liveClaims counts the NodeClaims of a NodePool that are not being deleted.
func liveClaims(t *testing.T, e *provisioningEnv, pool string) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	var out []v1.NodeClaim
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

// A static NodePool (StaticCapacity gate) keeps spec.replicas nodes whatever
// the pods, and `kubectl scale nodepool` resizes it through the scale
// subresource, both ways.
func TestStaticNodePoolScaledWithKubectl(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t, "FEATURE_GATES=StaticCapacity=true")
	np := kit.DefaultNodePool("static", "default", 4)
	np.Spec.Replicas = ptr.To[int64](2)
	np.Spec.Disruption = v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration(v1.Never)}
	e.apply(t, kit.DefaultNodeClass(0), np)
	want := func(n int) {
		t.Helper()
		if err := poll(e.ctx, 2*time.Minute, func() (bool, error) { return len(liveClaims(t, e, "static")) == n, nil }); err != nil {
			t.Fatalf("static nodepool has %d nodeclaims, want %d", len(liveClaims(t, e, "static")), n)
		}
	}
	want(2)
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(root, "bin", "k8s", "current", "kubectl")
	for _, n := range []string{"4", "1"} {
		out, err := exec.Command(kubectl, "--kubeconfig", e.Kubeconfig, "scale", "nodepool", "static", "--replicas", n).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "scaled") {
			t.Fatalf("kubectl scale nodepool static --replicas %s: %v\n%s", n, err, out)
		}
		switch n {
		case "4":
			want(4)
		case "1":
			want(1)
		}
	}
	got := &v1.NodePool{}
	if err := e.Client.Get(e.ctx, client.ObjectKey{Name: "static"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		t.Fatalf("spec.replicas %v after kubectl scale, want 1", got.Spec.Replicas)
	}
}

// With the NodeOverlay gate, an overlay taking 40% off the m family moves the
// next launch to it: pods that would get c nodes get m nodes.
func TestNodeOverlayMovesLaunchesToTheCheapenedFamily(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t, "FEATURE_GATES=NodeOverlay=true")
	overlay := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m-cheaper"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: kwokv1alpha1.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}},
			PriceAdjustment: ptr.To("-40%"),
		},
	}
	e.apply(t, overlay)
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		o := &v1alpha1.NodeOverlay{}
		if err := e.Client.Get(e.ctx, client.ObjectKey{Name: "m-cheaper"}, o); err != nil {
			return false, err
		}
		return o.StatusConditions().Get(v1alpha1.ConditionTypeValidationSucceeded).IsTrue(), nil
	}); err != nil {
		t.Fatal("the overlay was not validated")
	}
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 8), kit.Deployment("default", "web", 6, "1", "1Gi", false))
	e.waitRunning(t, 6, 3*time.Minute)
	for _, nc := range liveClaims(t, e, "default") {
		if fam := nc.Labels[kwokv1alpha1.InstanceFamilyLabelKey]; fam != "m" {
			t.Errorf("nodeclaim %s of family %q (%s), want the overlaid m family", nc.Name, fam, nc.Labels[corev1.LabelInstanceTypeStable])
		}
		if nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "true" {
			t.Errorf("nodeclaim %s lacks %s", nc.Name, v1alpha1.PriceOverlayAppliedAnnotationKey)
		}
	}
}
