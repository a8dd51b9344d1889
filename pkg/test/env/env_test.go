package env_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
	"github.com/karpenter-go/karpenter/pkg/test/env"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

func TestNamespaceRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "round-trip", Labels: map[string]string{"team": "a"}}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Namespace{}
	if err := e.Client.Get(ctx, key(ns.Name), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "a" || got.UID == "" || got.Labels["kubernetes.io/metadata.name"] != "round-trip" {
		t.Fatalf("namespace read back wrong: labels %v uid %q", got.Labels, got.UID)
	}
	// The same object through the typed clientset.
	viaClientset, err := e.KubeClient.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil || viaClientset.UID != got.UID {
		t.Fatalf("clientset read: %v, uid %v vs %v", err, viaClientset.UID, got.UID)
	}
}

func TestNodeRoundTripAndStatus(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"topology.kubernetes.io/zone": "test-zone-a"}},
		Spec: corev1.NodeSpec{
			ProviderID: "kwok://node-a",
			Taints:     []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
		},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	if err := e.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := e.Client.Get(ctx, key(node.Name), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.ProviderID != "kwok://node-a" || got.Status.Capacity.Cpu().String() != "4" {
		t.Fatalf("node read back wrong: %+v %+v", got.Spec, got.Status.Capacity)
	}
	// Our taint is kept, and the real API server's TaintNodesByCondition admission
	// added node.kubernetes.io/not-ready, which no fake client would do.
	taints := map[string]bool{}
	for _, tn := range got.Spec.Taints {
		taints[tn.Key] = true
	}
	if !taints["karpenter.sh/unregistered"] || !taints["node.kubernetes.io/not-ready"] {
		t.Fatalf("expected the unregistered taint and the admission-added not-ready taint, got %v", got.Spec.Taints)
	}
	// The API server validates: an invalid taint effect is refused, naming the field.
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: "Sometimes"}}}}
	err := e.Client.Create(ctx, bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "taints[0].effect") {
		t.Fatalf("expected an Invalid error naming taints[0].effect, got %v", err)
	}
	if err := e.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, key(node.Name), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there after delete: %v", err)
	}
}

func TestMissingBinariesNameTheMakeTarget(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", filepath.Join(t.TempDir(), "nowhere"))
	_, err := env.Start()
	if err == nil || !strings.Contains(err.Error(), "make cluster-bins") || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("expected one line naming `make cluster-bins`, got %q", err)
	}
}

func key(name string) client.ObjectKey {
	return client.ObjectKey{Name: name}
}

// TestWithCRDsInstallsExactlyTheChosenSet: a second API server started with
// one chosen CRD serves it (established on return) and none of the others.
func TestWithCRDsInstallsExactlyTheChosenSet(t *testing.T) {
	var nodePools *apiextensionsv1.CustomResourceDefinition
	for _, c := range crds.CRDs() {
		if c.Name == "nodepools.karpenter.sh" {
			nodePools = c
		}
	}
	if nodePools == nil {
		t.Fatal("no nodepools.karpenter.sh among pkg/apis/crds")
	}
	other := env.StartT(t, env.WithCRDs(nodePools))
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := other.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != nodePools.Name {
		var names []string
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		t.Fatalf("CRDs installed: %v, want only %s", names, nodePools.Name)
	}
	established := false
	for _, c := range list.Items[0].Status.Conditions {
		established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
	}
	if !established {
		t.Fatalf("%s not established when Start returned: %+v", nodePools.Name, list.Items[0].Status.Conditions)
	}
}
