package chart_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
)

// applyAll server-side applies every object (dry-run unless real) and
// reports each refusal, naming the object.
func applyAll(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured, real bool) {
	t.Helper()
	opts := []client.ApplyOption{client.FieldOwner("helm"), client.ForceOwnership}
	if !real {
		opts = append(opts, client.DryRunAll)
	}
	for _, o := range objs {
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), opts...); err != nil {
			t.Errorf("applying %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// serviceMonitorCRD stands in for prometheus-operator's CRD, so that the
// ServiceMonitor is checked by the apiserver like the other objects.
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
				OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve},
			}}},
		},
	}
}

func TestRenderedObjectsApplyDryRun(t *testing.T) {
	ctx := context.Background()
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}})); err != nil {
		t.Fatal(err)
	}
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, serviceMonitorCRD())); err != nil {
		t.Fatal(err)
	}
	installCertManagerCRDs(t)
	for name, args := range map[string][]string{
		"defaults":    {"--set", "settings.clusterName=dev"},
		"eks":         {"-f", "testdata/eks.yaml"},
		"every value": {"-f", "testdata/every-value.yaml"},
		"kwok":        {"--set", "cloudProvider=kwok"},
	} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, "karpenter", args...)
			if len(objs) < 8 {
				t.Fatalf("only %d objects rendered", len(objs))
			}
			applyAll(ctx, t, objs, false)
		})
	}
	for name, args := range map[string][]string{
		"crds webhook off":  nil,
		"crds webhook on":   {"--set", "webhook.enabled=true"},
		"crds kwok":         {"--set", "cloudProvider=kwok"},
		"crds with labels":  {"--set", "additionalLabels.team=platform", "--set", "additionalAnnotations.owner=me"},
		"crds other server": {"--set", "webhook.enabled=true", "--set", "webhook.serviceName=kp", "--set", "webhook.serviceNamespace=kube-system"},
	} {
		t.Run(name, func(t *testing.T) { applyAll(ctx, t, render(t, "karpenter-crd", args...), false) })
	}
}

// convertedCRDs are the CRDs with a v1beta1 version the conversion webhook
// serves; NodeOverlay and CapacityBuffer have one version each.
var convertedCRDs = map[string]bool{
	"nodepools.karpenter.sh": true, "nodeclaims.karpenter.sh": true, "ec2nodeclasses.karpenter.k8s.aws": true,
}

// TestCRDChart checks the karpenter-crd chart against the generated CRDs and
// a real apiserver: without the webhook it is exactly pkg/apis/crds; with it,
// v1beta1 is served through the webhook's Service; and a cluster upgraded from
// v1beta1 (status.storedVersions still listing it) takes both.
func TestCRDChart(t *testing.T) {
	ctx := context.Background()
	generated := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range crds.CRDs() {
		generated[c.Name] = c
	}
	off := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range render(t, "karpenter-crd") {
		off[u.GetName()] = toCRD(t, u)
	}
	if len(off) != 5 || off["ec2nodeclasses.karpenter.k8s.aws"] == nil || off["nodeoverlays.karpenter.sh"] == nil ||
		off["capacitybuffers.autoscaling.x-k8s.io"] == nil || off["kwoknodeclasses.karpenter.kwok.sh"] != nil {
		t.Errorf("aws CRDs rendered: %v, want nodepools, nodeclaims, ec2nodeclasses, nodeoverlays, capacitybuffers", keys(off))
	}
	for name, c := range off {
		if !equality.Semantic.DeepEqual(c.Spec, generated[name].Spec) {
			t.Errorf("%s: the chart's CRD differs from pkg/apis/crds (run make generate)", name)
		}
	}
	on := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range render(t, "karpenter-crd", "--set", "webhook.enabled=true") {
		on[u.GetName()] = toCRD(t, u)
	}
	for name, c := range on {
		conv := c.Spec.Conversion
		if !convertedCRDs[name] {
			// One version only: nothing to convert, whatever webhook.enabled says.
			if conv != nil && conv.Strategy != apiextensionsv1.NoneConverter {
				t.Errorf("%s: conversion %+v, want none", name, conv)
			}
			continue
		}
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook.ClientConfig.Service == nil {
			t.Errorf("%s: conversion %+v, want the webhook's Service", name, conv)
			continue
		}
		svc := conv.Webhook.ClientConfig.Service
		if svc.Name != "karpenter" || svc.Namespace != "karpenter" || *svc.Port != 8443 || !strings.HasPrefix(*svc.Path, "/conversion/") {
			t.Errorf("%s: webhook service %s/%s:%d%s", name, svc.Namespace, svc.Name, *svc.Port, *svc.Path)
		}
		for _, v := range c.Spec.Versions {
			if !v.Served {
				t.Errorf("%s: %s not served with the webhook on", name, v.Name)
			}
		}
	}

	// storedVersions: the NodePool CRD of a cluster that stored v1beta1 objects.
	nodepools := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "nodepools.karpenter.sh"}, nodepools); err != nil {
		t.Fatal(err)
	}
	nodepools.Status.StoredVersions = []string{"v1beta1", "v1"}
	if err := e.Client.Status().Update(ctx, nodepools); err != nil {
		t.Fatalf("recording v1beta1 as a stored version: %v", err)
	}
	for _, args := range [][]string{{"--set", "webhook.enabled=true"}, nil} {
		applyAll(ctx, t, render(t, "karpenter-crd", args...), true)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "nodepools.karpenter.sh"}, nodepools); err != nil {
		t.Fatal(err)
	}
	for _, v := range nodepools.Spec.Versions {
		if v.Name == "v1beta1" && v.Served {
			t.Error("v1beta1 still served after upgrading to webhook.enabled=false")
		}
	}
	// The control: a CRD without v1beta1 is what upstream users hit.
	dropped := find(t, render(t, "karpenter-crd"), "CustomResourceDefinition", "nodepools.karpenter.sh")
	versions, _, _ := unstructured.NestedSlice(dropped.Object, "spec", "versions")
	var kept []any
	for _, v := range versions {
		if v.(map[string]any)["name"] != "v1beta1" {
			kept = append(kept, v)
		}
	}
	_ = unstructured.SetNestedSlice(dropped.Object, kept, "spec", "versions")
	err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dropped), client.FieldOwner("helm"), client.ForceOwnership, client.DryRunAll)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "storedVersions") || !strings.Contains(err.Error(), "v1beta1") {
		t.Errorf("dropping v1beta1 from %s: %v, want the storedVersions refusal", dropped.GetName(), err)
	}
}

func toCRD(t *testing.T, u *unstructured.Unstructured) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		t.Fatalf("%s: %v", u.GetName(), err)
	}
	return c
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func toCRDFromCluster(ctx context.Context, t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}
