package kwok_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// A KWOKNodeClass whose readiness is not known yet (no Ready condition, as
// right after it is created) launches; only Ready=False refuses.
func TestCreateLaunchesWhileNodeClassReadinessIsUnknown(t *testing.T) {
	ctx, cp, _ := setup(t)
	ExpectApplied(ctx, t, e.Client, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}})
	created, err := cp.Create(ctx, nodeClaim("claim-fresh", "fresh"))
	if err != nil {
		t.Fatalf("Create with a NodeClass of unknown readiness: %v", err)
	}
	if created.Status.ProviderID == "" {
		t.Fatalf("no instance launched: %+v", created.Status)
	}
}
