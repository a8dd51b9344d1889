package karpenter_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// TestImmutableFields checks the transition rules: a NodeClaim's spec cannot
// change, and a NodePool's nodeClassRef keeps its group and kind (its name may
// change, which drifts the nodes).
func TestImmutableFields(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	cases := []struct {
		name, base, patch, field, message string
	}{
		{"NodeClaim requirements", baseNodeClaim, `spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}`, "spec", "spec is immutable"},
		{"NodeClaim nodeClassRef name", baseNodeClaim, `spec: {nodeClassRef: {name: other}}`, "spec", "spec is immutable"},
		{"NodePool nodeClassRef group", baseNodePool, `spec: {template: {spec: {nodeClassRef: {group: karpenter.kwok.sh}}}}`, "spec.template.spec.nodeClassRef", "nodeClassRef.group is immutable"},
		{"NodePool nodeClassRef kind", baseNodePool, `spec: {template: {spec: {nodeClassRef: {kind: KWOKNodeClass}}}}`, "spec.template.spec.nodeClassRef", "nodeClassRef.kind is immutable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := expectations.Manifest(t, tc.base, "")
			obj.SetName("immutable")
			if err := e.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
			updated := obj.DeepCopy()
			patch := expectations.Manifest(t, "{}", tc.patch)
			expectations.MergePatch(updated.Object, patch.Object)
			err := e.Client.Update(ctx, updated)
			if err == nil {
				t.Fatalf("update accepted, want %q", tc.message)
			}
			if !apierrors.IsInvalid(err) || !expectations.NamesField(err, tc.field, tc.message) {
				t.Fatalf("rejection does not name %q with %q: %v", tc.field, tc.message, err)
			}
		})
	}
	// Renaming the NodeClass is allowed.
	obj := expectations.Manifest(t, baseNodePool, "")
	obj.SetName("rename-nodeclass")
	if err := e.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
	if err := unstructured.SetNestedField(obj.Object, "other", "spec", "template", "spec", "nodeClassRef", "name"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Update(ctx, obj); err != nil {
		t.Fatalf("renaming nodeClassRef.name rejected: %v", err)
	}
}
