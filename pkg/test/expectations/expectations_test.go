package expectations_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// ExpectApplied must store the status of kinds with a status subresource,
// which a plain Create drops, and update objects that exist.
func TestExpectAppliedWritesStatusAndUpdates(t *testing.T) {
	ctx := context.Background()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "applied"}}
	nc.StatusConditions().SetTrue(status.ConditionReady)
	ExpectApplied(ctx, t, e.Client, nc)
	got := ExpectExists(ctx, t, e.Client, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "applied"}})
	if !got.StatusConditions().Root().IsTrue() {
		t.Fatalf("status not stored: %+v", got.Status)
	}
	if nc.ResourceVersion != got.ResourceVersion {
		t.Fatalf("the applied object must hold what the server stored: %s vs %s", nc.ResourceVersion, got.ResourceVersion)
	}

	nc.Labels = map[string]string{"updated": "yes"}
	ExpectApplied(ctx, t, e.Client, nc)
	if ExpectExists(ctx, t, e.Client, got).Labels["updated"] != "yes" {
		t.Fatal("existing object not updated")
	}

	// A kind without a status subresource.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	ExpectApplied(ctx, t, e.Client, cm)
	ExpectApplied(ctx, t, e.Client, cm)

	ExpectDeleted(ctx, t, e.Client, nc, cm)
	ExpectNotFound(ctx, t, e.Client, nc, cm)
}

func TestExpectCleanedUpRemovesFinalizedObjects(t *testing.T) {
	ctx := context.Background()
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}},
	}
	ExpectApplied(ctx, t, e.Client, np)
	ExpectDeleted(ctx, t, e.Client, np)
	if ExpectExists(ctx, t, e.Client, np).DeletionTimestamp.IsZero() {
		t.Fatal("finalizer should hold the NodePool")
	}
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{})
	ExpectNotFound(ctx, t, e.Client, np)
}
