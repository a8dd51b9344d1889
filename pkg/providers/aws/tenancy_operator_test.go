package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// expectDedicatedNodes runs on the operator TestTheBundleRuns started (the
// controllers register process-wide metrics, so one operator per test
// binary), with the emulator registering Nodes: a pending pod of a NodePool
// that requires karpenter.k8s.aws/instance-tenancy dedicated gets a
// NodeClaim, an EC2 instance whose Placement.Tenancy is dedicated, and a Node
// labelled dedicated.
func expectDedicatedNodes(ctx context.Context, t *testing.T, em *awsemulator.Emulator) {
	t.Helper()
	// Afterwards, the NodeClaim, Node and pod go (before the manager stops,
	// which TestTheBundleRuns cleans after).
	defer ExpectCleanedUp(ctx, t, e.Client, &corev1.PodList{}, &v1.NodeClaimList{}, &corev1.NodeList{})
	np := fixtures.NodePool("dedicated", fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef("default")))
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		fixtures.Requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, awsv1.InstanceTenancyDedicated),
		fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand),
		fixtures.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge"))
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	if err := e.Client.Create(ctx, np.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	pod := fixtures.Pod("needs-dedicated", fixtures.Unschedulable())
	pod.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "dedicated"}
	ExpectApplied(ctx, t, e.Client, pod) // with its Unschedulable status

	var claim *v1.NodeClaim
	Eventually(t, 90*time.Second, func() error {
		claims := &v1.NodeClaimList{}
		if err := e.Client.List(ctx, claims); err != nil {
			return err
		}
		if len(claims.Items) != 1 {
			return fmt.Errorf("%d NodeClaims", len(claims.Items))
		}
		claim = &claims.Items[0]
		if claim.Status.ProviderID == "" || claim.Status.NodeName == "" {
			return fmt.Errorf("NodeClaim %s not launched and registered yet: %v", claim.Name, claim.Status.Conditions)
		}
		return nil
	})
	if got := claim.Labels[awsv1.LabelInstanceTenancy]; got != awsv1.InstanceTenancyDedicated {
		t.Errorf("NodeClaim labelled %s=%q, want dedicated", awsv1.LabelInstanceTenancy, got)
	}
	var instances []awsemulator.Instance
	for _, in := range em.Instances() {
		instances = append(instances, in)
		if in.Tenancy != "dedicated" {
			t.Errorf("instance %s launched with tenancy %q, want dedicated", in.ID, in.Tenancy)
		}
	}
	if len(instances) != 1 {
		t.Errorf("%d instances launched, want 1", len(instances))
	}
	node := ExpectExists(ctx, t, e.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.NodeName}})
	if got := node.Labels[awsv1.LabelInstanceTenancy]; got != awsv1.InstanceTenancyDedicated {
		t.Errorf("Node %s labelled %s=%q, want dedicated", node.Name, awsv1.LabelInstanceTenancy, got)
	}
}
