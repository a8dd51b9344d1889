package zonalshift_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

// shippedPolicy is docs/aws/controller-policy.json rendered for the emulator.
func shippedPolicy(t *testing.T, em *awsemulator.Emulator) string {
	t.Helper()
	b, err := os.ReadFile("../../../../docs/aws/controller-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	return em.RenderPolicy(string(b), nil)
}

func arcClient(em *awsemulator.Emulator) *arczonalshift.Client {
	return arczonalshift.NewFromConfig(awstest.Config(em))
}
