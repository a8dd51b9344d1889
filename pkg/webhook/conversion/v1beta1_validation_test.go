package conversion_test

import (
	"context"
	"strings"
	"testing"
)

// TestV1beta1Validation: with v1beta1 served, its own CEL rules apply.
func TestV1beta1Validation(t *testing.T) {
	c := startWebhook(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		disruption map[string]interface{}
		message    string
	}{
		{"WhenEmpty without consolidateAfter", map[string]interface{}{"consolidationPolicy": "WhenEmpty"}, "consolidateAfter must be specified with consolidationPolicy=WhenEmpty"},
		{"WhenUnderutilized with consolidateAfter", map[string]interface{}{"consolidationPolicy": "WhenUnderutilized", "consolidateAfter": "30s"}, "consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := manifest(t, "seed004-nodepool.yaml")
			in.SetName("invalid-beta")
			in.Object["spec"].(map[string]interface{})["disruption"] = tc.disruption
			err := c.Create(ctx, in)
			if err == nil {
				_ = c.Delete(ctx, in)
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), "spec.disruption") || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("rejection does not name spec.disruption with %q: %v", tc.message, err)
			}
		})
	}
}
