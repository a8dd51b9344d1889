package convert_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// TestNodePoolV1beta1RoundTrip: 1,000 random v1beta1 NodePools survive
// v1beta1 -> v1 -> v1beta1 unchanged, and the input is not modified.
func TestNodePoolV1beta1RoundTrip(t *testing.T) {
	g := newCoreGen(11)
	var kubelets, refAnnotations int
	for i := range roundTrips {
		in := g.V1beta1NodePool()
		mid := expectRoundTrip(t, i, in, convert.NodePoolV1beta1ToV1, convert.NodePoolV1ToV1beta1, "v1beta1", "v1")
		if _, ok := mid.Annotations[v1.KubeletCompatibilityAnnotationKey]; ok {
			kubelets++
		}
		if _, ok := mid.Annotations[v1.NodeClassReferenceAnnotationKey]; ok {
			refAnnotations++
		}
	}
	// The generator must exercise the annotation paths, or the test proves little.
	if kubelets < roundTrips/5 || refAnnotations < roundTrips/5 {
		t.Errorf("too few objects exercised annotations: kubelet %d, nodeClassRef %d", kubelets, refAnnotations)
	}
}

// TestNodePoolV1RoundTrip: 1,000 random v1 NodePools survive
// v1 -> v1beta1 -> v1 unchanged, including the fields v1beta1 lacks.
func TestNodePoolV1RoundTrip(t *testing.T) {
	g := newCoreGen(12)
	var stashed int
	for i := range roundTrips {
		in := g.V1NodePool()
		mid := expectRoundTrip(t, i, in, convert.NodePoolV1ToV1beta1, convert.NodePoolV1beta1ToV1, "v1", "v1beta1")
		if _, ok := mid.Annotations[v1.V1OnlyFieldsAnnotationKey]; ok {
			stashed++
		}
	}
	if stashed < roundTrips/5 {
		t.Errorf("only %d objects carried v1-only fields", stashed)
	}
}

// TestNodeClaimV1beta1RoundTrip: 1,000 random v1beta1 NodeClaims survive
// v1beta1 -> v1 -> v1beta1 unchanged.
func TestNodeClaimV1beta1RoundTrip(t *testing.T) {
	g := newCoreGen(13)
	for i := range roundTrips {
		in := g.V1beta1NodeClaim()
		expectRoundTrip(t, i, in, convert.NodeClaimV1beta1ToV1, convert.NodeClaimV1ToV1beta1, "v1beta1", "v1")
	}
}

// TestNodeClaimV1RoundTrip: 1,000 random v1 NodeClaims survive
// v1 -> v1beta1 -> v1 unchanged, including expireAfter,
// terminationGracePeriod and lastPodEventTime.
func TestNodeClaimV1RoundTrip(t *testing.T) {
	g := newCoreGen(14)
	for i := range roundTrips {
		in := g.V1NodeClaim()
		expectRoundTrip(t, i, in, convert.NodeClaimV1ToV1beta1, convert.NodeClaimV1beta1ToV1, "v1", "v1beta1")
	}
}

func v1beta1Pool(policy v1beta1.ConsolidationPolicy, after *string) *v1beta1.NodePool {
	np := &v1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption.ConsolidationPolicy = policy
	np.Spec.Disruption.ExpireAfter = v1.MustParseNillableDuration("1440h")
	if after != nil {
		d := v1.MustParseNillableDuration(*after)
		np.Spec.Disruption.ConsolidateAfter = &d
	}
	np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{APIVersion: "karpenter.k8s.aws/v1beta1", Kind: "EC2NodeClass", Name: "default"}
	return np
}

// TestNodePoolV1beta1ToV1Rules pins the individual upstream rules.
func TestNodePoolV1beta1ToV1Rules(t *testing.T) {
	t.Run("WhenUnderutilized becomes WhenEmptyOrUnderutilized after 0s", func(t *testing.T) {
		out, err := convert.NodePoolV1beta1ToV1(v1beta1Pool(v1beta1.ConsolidationPolicyWhenUnderutilized, nil))
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized || out.Spec.Disruption.ConsolidateAfter.String() != "0s" {
			t.Errorf("disruption = %+v", out.Spec.Disruption)
		}
	})
	t.Run("WhenEmpty keeps consolidateAfter", func(t *testing.T) {
		out, err := convert.NodePoolV1beta1ToV1(v1beta1Pool(v1beta1.ConsolidationPolicyWhenEmpty, ptr.To("30s")))
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmpty || out.Spec.Disruption.ConsolidateAfter.String() != "30s" {
			t.Errorf("disruption = %+v", out.Spec.Disruption)
		}
	})
	t.Run("expireAfter moves into the template", func(t *testing.T) {
		out, err := convert.NodePoolV1beta1ToV1(v1beta1Pool(v1beta1.ConsolidationPolicyWhenUnderutilized, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Spec.Template.Spec.ExpireAfter.String(); got != "1440h" {
			t.Errorf("template expireAfter = %s, want 1440h", got)
		}
	})
	t.Run("apiVersion becomes group without annotation", func(t *testing.T) {
		out, err := convert.NodePoolV1beta1ToV1(v1beta1Pool(v1beta1.ConsolidationPolicyWhenUnderutilized, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		if !reflect.DeepEqual(out.Spec.Template.Spec.NodeClassRef, want) {
			t.Errorf("nodeClassRef = %+v", out.Spec.Template.Spec.NodeClassRef)
		}
		if _, ok := out.Annotations[v1.NodeClassReferenceAnnotationKey]; ok {
			t.Errorf("annotation written although the reference converts back exactly")
		}
	})
	t.Run("name-only reference gets the provider defaults and keeps its spelling", func(t *testing.T) {
		in := v1beta1Pool(v1beta1.ConsolidationPolicyWhenUnderutilized, nil)
		in.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "default"}
		out, err := convert.NodePoolV1beta1ToV1(in)
		if err != nil {
			t.Fatal(err)
		}
		want := &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		if !reflect.DeepEqual(out.Spec.Template.Spec.NodeClassRef, want) {
			t.Errorf("nodeClassRef = %+v", out.Spec.Template.Spec.NodeClassRef)
		}
		if got := out.Annotations[v1.NodeClassReferenceAnnotationKey]; got != `{"name":"default"}` {
			t.Errorf("annotation = %q", got)
		}
	})
	t.Run("kubelet travels in the compatibility annotation", func(t *testing.T) {
		in := v1beta1Pool(v1beta1.ConsolidationPolicyWhenUnderutilized, nil)
		in.Spec.Template.Spec.Kubelet = &v1beta1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.10"}, MaxPods: ptr.To(int32(234))}
		out, err := convert.NodePoolV1beta1ToV1(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Annotations[v1.KubeletCompatibilityAnnotationKey]; got != `{"clusterDNS":["10.0.0.10"],"maxPods":234}` {
			t.Errorf("kubelet annotation = %q", got)
		}
	})
}

// TestNodePoolV1ToV1beta1Rules pins the inverse rules.
func TestNodePoolV1ToV1beta1Rules(t *testing.T) {
	in := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	in.Spec.Template.Spec = v1.NodeClaimTemplateSpec{
		NodeClassRef:           &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
		ExpireAfter:            v1.MustParseNillableDuration("Never"),
		TerminationGracePeriod: &metav1.Duration{Duration: 3600e9},
		Requirements:           []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
	}
	in.Spec.Disruption = v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: v1.MustParseNillableDuration("0s")}
	out, err := convert.NodePoolV1ToV1beta1(in)
	if err != nil {
		t.Fatal(err)
	}
	d := out.Spec.Disruption
	if d.ConsolidationPolicy != v1beta1.ConsolidationPolicyWhenUnderutilized || d.ConsolidateAfter != nil {
		t.Errorf("disruption = %+v, want WhenUnderutilized without consolidateAfter", d)
	}
	if d.ExpireAfter.String() != "Never" {
		t.Errorf("expireAfter = %s", d.ExpireAfter)
	}
	if ref := out.Spec.Template.Spec.NodeClassRef; ref.APIVersion != "karpenter.kwok.sh/v1alpha1" || ref.Kind != "KWOKNodeClass" {
		t.Errorf("nodeClassRef = %+v", ref)
	}
	if got := out.Annotations[v1.V1OnlyFieldsAnnotationKey]; got != `{"terminationGracePeriod":"1h0m0s"}` {
		t.Errorf("v1-fields annotation = %q", got)
	}
}

// TestNodeClaimExpireAfterFromNodePool: a v1beta1 NodeClaim takes the owning
// NodePool's expireAfter when converted with it.
func TestNodeClaimExpireAfterFromNodePool(t *testing.T) {
	nodeClaim := &v1beta1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1beta1.NodeClaimSpec{NodeClassRef: &v1beta1.NodeClassReference{Name: "default"}}}
	np := &v1.NodePool{}
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("48h")
	out, err := convert.NodeClaimV1beta1ToV1WithNodePool(nodeClaim, np)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.ExpireAfter.String() != "48h" {
		t.Errorf("expireAfter = %s, want 48h", out.Spec.ExpireAfter)
	}
	out, err = convert.NodeClaimV1beta1ToV1(nodeClaim)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.ExpireAfter.String() != "720h" {
		t.Errorf("expireAfter without NodePool = %s, want 720h", out.Spec.ExpireAfter)
	}
}
