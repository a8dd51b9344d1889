package aws_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// A launch whose EC2NodeClass has not been reconciled yet fails with a
// CreateError (NodeClassReadinessUnknown), which lifecycle retries; only a
// class that is Ready=False is a NodeClassNotReadyError, which deletes the
// NodeClaim.
func TestCreateWaitsForAnUnreconciledNodeClass(t *testing.T) {
	ctx, cp, _, ready := launchSetup(t)
	fresh := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, Spec: *ready.Spec.DeepCopy()}
	ExpectApplied(ctx, t, e.Client, fresh)
	claim := launchtest.NodeClaim("fresh-abcde", fresh, []string{"on-demand"}, "m5.large")

	_, err := cp.Create(ctx, claim)
	var createErr *cloudprovider.CreateError
	if cloudprovider.IsNodeClassNotReadyError(err) || !errors.As(err, &createErr) || createErr.ConditionReason != "NodeClassReadinessUnknown" {
		t.Fatalf("error %v, want a CreateError with reason NodeClassReadinessUnknown", err)
	}

	fresh = ExpectExists(ctx, t, e.Client, fresh)
	fresh.StatusConditions().SetFalse(awsv1.ConditionTypeSubnetsReady, "SubnetsNotFound", "SubnetSelector did not match any Subnets")
	ExpectStatusUpdated(ctx, t, e.Client, fresh)
	if _, err := cp.Create(ctx, claim); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Fatalf("error %v, want a NodeClassNotReadyError once the class is Ready=False", err)
	}
}
