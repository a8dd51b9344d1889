package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
)

// withTenancy adds a karpenter.k8s.aws/instance-tenancy requirement.
func withTenancy(nc *v1.NodeClaim, op corev1.NodeSelectorOperator, values ...string) *v1.NodeClaim {
	nc.Spec.Requirements = append(nc.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceTenancy, Operator: op, Values: values})
	return nc
}

// describeTenancy is the instance's Placement.Tenancy as DescribeInstances answers it.
func describeTenancy(t *testing.T, ctx context.Context, api *ec2.Client, providerID string) ec2types.Tenancy {
	t.Helper()
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 || out.Reservations[0].Instances[0].Placement == nil {
		t.Fatalf("DescribeInstances %s: %+v", id, out.Reservations)
	}
	return out.Reservations[0].Instances[0].Placement.Tenancy
}

// templateOf is the emulator's launch template the instance launched with.
func templateOf(t *testing.T, em *awsemulator.Emulator, providerID string) awsemulator.LaunchTemplate {
	t.Helper()
	id, _ := instance.ParseProviderID(providerID)
	for _, in := range em.Instances() {
		if in.ID != id {
			continue
		}
		for _, lt := range em.LaunchTemplates() {
			if lt.ID == in.LaunchTemplateID {
				return lt
			}
		}
	}
	t.Fatalf("no launch template for %s", providerID)
	return awsemulator.LaunchTemplate{}
}

// A NodeClaim that allows only dedicated tenancy launches a Dedicated
// Instance: its launch template carries Placement.Tenancy dedicated, EC2
// reports the instance dedicated, and the NodeClaim (at launch and as Get
// reads it back from DescribeInstances) is labelled dedicated. A NodeClaim
// that allows default as well launches shared, from a template of its own.
func TestDedicatedTenancyLaunchesDedicatedInstances(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)

	dedicated, err := cp.Create(ctx, withTenancy(launchtest.NodeClaim("dedicated", nc, []string{"on-demand"}, "m5.large"), corev1.NodeSelectorOpIn, awsv1.InstanceTenancyDedicated))
	if err != nil {
		t.Fatal(err)
	}
	if got := dedicated.Labels[awsv1.LabelInstanceTenancy]; got != awsv1.InstanceTenancyDedicated {
		t.Errorf("created NodeClaim labelled %s=%q, want dedicated", awsv1.LabelInstanceTenancy, got)
	}
	if got := describeTenancy(t, ctx, env.EC2, dedicated.Status.ProviderID); got != ec2types.TenancyDedicated {
		t.Errorf("DescribeInstances Placement.Tenancy %q, want dedicated", got)
	}
	dedicatedLT := templateOf(t, env.Emulator, dedicated.Status.ProviderID)
	if got := dedicatedLT.Tenancy(); got != "dedicated" {
		t.Errorf("launch template %s Placement.Tenancy %q, want dedicated", dedicatedLT.Name, got)
	}
	got, err := cp.Get(ctx, dedicated.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[awsv1.LabelInstanceTenancy] != awsv1.InstanceTenancyDedicated {
		t.Errorf("Get labels %s=%q, want dedicated (from DescribeInstances)", awsv1.LabelInstanceTenancy, got.Labels[awsv1.LabelInstanceTenancy])
	}

	// Both tenancies allowed: default, as upstream chooses.
	shared, err := cp.Create(ctx, withTenancy(launchtest.NodeClaim("shared", nc, []string{"on-demand"}, "m5.large"), corev1.NodeSelectorOpIn, awsv1.InstanceTenancyDefault, awsv1.InstanceTenancyDedicated))
	if err != nil {
		t.Fatal(err)
	}
	if got := shared.Labels[awsv1.LabelInstanceTenancy]; got != awsv1.InstanceTenancyDefault {
		t.Errorf("created NodeClaim labelled %s=%q, want default", awsv1.LabelInstanceTenancy, got)
	}
	if got := describeTenancy(t, ctx, env.EC2, shared.Status.ProviderID); got != ec2types.TenancyDefault {
		t.Errorf("DescribeInstances Placement.Tenancy %q, want default", got)
	}
	sharedLT := templateOf(t, env.Emulator, shared.Status.ProviderID)
	if sharedLT.ID == dedicatedLT.ID || sharedLT.Name == dedicatedLT.Name {
		t.Errorf("shared and dedicated launches share launch template %s", sharedLT.Name)
	}
	if got := sharedLT.Tenancy(); got != "default" {
		t.Errorf("launch template %s Placement.Tenancy %q, want default", sharedLT.Name, got)
	}

	// No tenancy requirement at all: default, through the shared template.
	plain, err := cp.Create(ctx, launchtest.NodeClaim("plain", nc, []string{"on-demand"}, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Labels[awsv1.LabelInstanceTenancy] != awsv1.InstanceTenancyDefault || templateOf(t, env.Emulator, plain.Status.ProviderID).ID != sharedLT.ID {
		t.Errorf("NodeClaim without a tenancy requirement: label %q, template %s; want default through %s",
			plain.Labels[awsv1.LabelInstanceTenancy], templateOf(t, env.Emulator, plain.Status.ProviderID).Name, sharedLT.Name)
	}

	// List reads tenancy back from EC2 too.
	list, err := cp.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{}
	for _, c := range list {
		byID[c.Status.ProviderID] = c.Labels[awsv1.LabelInstanceTenancy]
	}
	if byID[dedicated.Status.ProviderID] != "dedicated" || byID[shared.Status.ProviderID] != "default" {
		t.Errorf("List tenancy labels %v", byID)
	}
}

// Requirements that allow no tenancy Karpenter launches fail with a launch
// error naming the requirement; nothing is launched.
func TestUnsupportedTenancyIsRefusedByName(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	for _, c := range []struct {
		name   string
		op     corev1.NodeSelectorOperator
		values []string
		want   string
	}{
		{"host", corev1.NodeSelectorOpIn, []string{"host"}, "In [host]"},
		{"unknown", corev1.NodeSelectorOpIn, []string{"shared", "single"}, "In [shared single]"},
		{"none", corev1.NodeSelectorOpNotIn, []string{"default", "dedicated"}, "NotIn [dedicated default]"},
	} {
		_, err := cp.Create(ctx, withTenancy(launchtest.NodeClaim(c.name, nc, []string{"on-demand"}, "m5.large"), c.op, c.values...))
		var createErr *cloudprovider.CreateError
		if !errors.As(err, &createErr) || createErr.ConditionReason != instance.ReasonUnsupportedTenancy {
			t.Errorf("%s: error %v, want a CreateError with reason %s", c.name, err, instance.ReasonUnsupportedTenancy)
			continue
		}
		if !strings.Contains(err.Error(), awsv1.LabelInstanceTenancy+" "+c.want) || !strings.Contains(createErr.ConditionMessage, c.want) {
			t.Errorf("%s: error %q (condition message %q) does not name %s %s", c.name, err, createErr.ConditionMessage, awsv1.LabelInstanceTenancy, c.want)
		}
	}
	if n := len(env.Emulator.Instances()); n != 0 {
		t.Errorf("%d instances launched for tenancies that cannot be honoured", n)
	}
	if n := env.Emulator.Calls("ec2", "CreateFleet"); n != 0 {
		t.Errorf("%d CreateFleet calls for tenancies that cannot be honoured", n)
	}
}

// An instance type EC2 refuses to run as a Dedicated Instance is skipped for
// the next type the NodeClaim allows; it is never launched shared instead.
func TestDedicatedRefusedTypeIsNotLaunchedShared(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	env.Emulator.SetTenancyUnsupported("m5.large", "dedicated", true)
	got, err := cp.Create(ctx, withTenancy(launchtest.NodeClaim("dedicated", nc, []string{"on-demand"}, "m5.large", "m5.xlarge"), corev1.NodeSelectorOpIn, awsv1.InstanceTenancyDedicated))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "m5.xlarge" || got.Labels[awsv1.LabelInstanceTenancy] != "dedicated" {
		t.Errorf("launched %s %s, want m5.xlarge dedicated", got.Labels[corev1.LabelInstanceTypeStable], got.Labels[awsv1.LabelInstanceTenancy])
	}
	for _, in := range env.Emulator.Instances() {
		if in.Tenancy != "dedicated" {
			t.Errorf("instance %s (%s) launched with tenancy %q", in.ID, in.InstanceType, in.Tenancy)
		}
	}
	// Only m5.large allowed: no capacity, and still nothing shared.
	_, err = cp.Create(ctx, withTenancy(launchtest.NodeClaim("only-large", nc, []string{"on-demand"}, "m5.large"), corev1.NodeSelectorOpIn, awsv1.InstanceTenancyDedicated))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("error %v, want InsufficientCapacity", err)
	}
	if n := len(env.Emulator.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}
