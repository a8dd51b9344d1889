package nodeclass_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// noDedicatedPolicy allows everything but launching Dedicated Instances.
const noDedicatedPolicy = `{"Version":"2012-10-17","Statement":[
	{"Effect":"Allow","Action":["ec2:*","iam:*","ssm:*","eks:*","pricing:*"],"Resource":"*"},
	{"Sid":"NoDedicated","Effect":"Deny","Action":"ec2:RunInstances","Resource":"arn:aws:ec2:*:*:instance/*",
	 "Condition":{"StringEquals":{"ec2:Tenancy":"dedicated"}}}]}`

// The validation's dry runs ask for dedicated tenancy when a NodePool of the
// class allows it (upstream's rule), so an account that may not launch
// Dedicated Instances shows on the class before any launch; a class whose
// NodePools keep to shared tenancy validates.
func TestDryRunsUseDedicatedTenancyOfTheNodePools(t *testing.T) {
	f := setup(t)
	ExpectCleanedUp(f.ctx, t, e.Client, &karpv1.NodePoolList{})
	t.Cleanup(func() { ExpectCleanedUp(f.ctx, t, e.Client, &karpv1.NodePoolList{}) })
	if err := f.aws.SetPolicy(noDedicatedPolicy); err != nil {
		t.Fatal(err)
	}
	shared := newNodeClass("shared")
	dedicated := newNodeClass("dedicated")
	ExpectApplied(f.ctx, t, e.Client, shared, dedicated)
	sharedPool := fixtures.NodePool("shared-pool")
	sharedPool.Spec.Template.Spec.NodeClassRef = fixtures.EC2NodeClassRef("shared")
	sharedPool.Spec.Template.Spec.Requirements = append(sharedPool.Spec.Template.Spec.Requirements,
		fixtures.Requirement(v1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, v1.InstanceTenancyDefault))
	// Dedicated allowed next to default: upstream validates dedicated.
	dedicatedPool := fixtures.NodePool("dedicated-pool")
	dedicatedPool.Spec.Template.Spec.NodeClassRef = fixtures.EC2NodeClassRef("dedicated")
	dedicatedPool.Spec.Template.Spec.Requirements = append(dedicatedPool.Spec.Template.Spec.Requirements,
		fixtures.Requirement(v1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, v1.InstanceTenancyDefault, v1.InstanceTenancyDedicated))
	ExpectApplied(f.ctx, t, e.Client, sharedPool, dedicatedPool)

	got := f.reconcile(t, shared)
	expectCondition(t, got, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
	got = f.reconcile(t, dedicated)
	expectCondition(t, got, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, nodeclass.ReasonCreateFleetAuthFailed, "Controller isn't authorized to call ec2:CreateFleet")
	denied := false
	for _, d := range f.aws.Denials() {
		denied = denied || d.Permission == "ec2:RunInstances" && d.Resource == "arn:aws:ec2:us-west-2:123456789012:instance/*"
	}
	if !denied {
		t.Errorf("no dedicated instance was denied: %v", f.aws.Denials())
	}

	// The NodePool back to shared tenancy: validated again at once (the
	// tenancy is part of what the answer is cached by) and passes.
	dedicatedPool = ExpectExists(f.ctx, t, e.Client, dedicatedPool)
	dedicatedPool.Spec.Template.Spec.Requirements[len(dedicatedPool.Spec.Template.Spec.Requirements)-1].Values = []string{v1.InstanceTenancyDefault}
	ExpectApplied(f.ctx, t, e.Client, dedicatedPool)
	got = f.reconcile(t, dedicated)
	expectCondition(t, got, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
}
