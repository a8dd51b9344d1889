package launchtemplate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func ensure(t *testing.T, env *launchtest.Env, p *launchtemplate.Provider, ncName string) []*launchtemplate.Launch {
	t.Helper()
	nc := env.NodeClass(t, ncName)
	claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	claim.Spec.NodeClassRef.Name = ncName
	launches, err := p.EnsureAll(context.Background(), nc, claim, env.InstanceTypesFor(t, nc, claim), "on-demand", env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	return launches
}

// Templates are cached for the TTL after their last use, found again by a
// new provider (restart), and deleted once unused for a TTL.
func TestCacheHydrateSweep(t *testing.T) {
	env := launchtest.New(t)
	launches := ensure(t, env, env.LaunchTemplates, "default")
	if len(launches) != 1 || launches[0].ID == "" || !strings.HasPrefix(launches[0].Name, "karpenter.k8s.aws/") || launches[0].ImageID == "" {
		t.Fatalf("launches %+v", launches)
	}
	ensure(t, env, env.LaunchTemplates, "default")
	if c := env.Emulator.Calls("ec2", "CreateLaunchTemplate"); c != 1 {
		t.Fatalf("%d CreateLaunchTemplate calls, want 1 (cached)", c)
	}

	// A restarted controller finds the template and reuses it.
	restarted := launchtemplate.NewProvider(env.EC2, amifamily.NewResolver(), env.Clock, launchtemplate.Options{ClusterName: env.ClusterName, EKS: eks.NewFromConfig(env.Config)})
	if err := restarted.Hydrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := ensure(t, env, restarted, "default")
	if again[0].ID != launches[0].ID || env.Emulator.Calls("ec2", "CreateLaunchTemplate") != 1 {
		t.Fatalf("restarted provider did not reuse %s: %+v", launches[0].ID, again)
	}

	// Unused for a TTL: deleted.
	env.Clock.Step(launchtemplate.DefaultTTL + time.Second)
	restarted.Sweep(context.Background())
	if n := len(env.Emulator.LaunchTemplates()); n != 0 {
		t.Fatalf("%d launch templates after a TTL unused, want 0", n)
	}
}

// A template created elsewhere under the same name is reused.
func TestAlreadyExists(t *testing.T) {
	env := launchtest.New(t)
	other := launchtemplate.NewProvider(env.EC2, amifamily.NewResolver(), env.Clock, launchtemplate.Options{ClusterName: env.ClusterName, EKS: eks.NewFromConfig(env.Config)})
	first := ensure(t, env, other, "default")
	second := ensure(t, env, env.LaunchTemplates, "default")
	if first[0].ID != second[0].ID {
		t.Fatalf("ids %s and %s, want the same template", first[0].ID, second[0].ID)
	}
	if c := env.Emulator.Calls("ec2", "CreateLaunchTemplate"); c != 2 {
		t.Errorf("%d CreateLaunchTemplate calls, want 2 (one AlreadyExists)", c)
	}
}

// Two classes have templates of their own; DeleteAll deletes the class's only.
func TestDeleteAll(t *testing.T) {
	env := launchtest.New(t)
	ensure(t, env, env.LaunchTemplates, "default")
	ensure(t, env, env.LaunchTemplates, "other")
	lts := env.Emulator.LaunchTemplates()
	if len(lts) < 2 {
		t.Fatalf("%d launch templates for two classes, want at least 2", len(lts))
	}
	nc := env.NodeClass(t, "default")
	if err := env.LaunchTemplates.DeleteAll(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	for _, lt := range env.Emulator.LaunchTemplates() {
		if lt.Tags["karpenter.k8s.aws/ec2nodeclass"] == "default" {
			t.Errorf("launch template %s of the deleted class remains", lt.Name)
		}
	}
	if len(env.Emulator.LaunchTemplates()) == 0 {
		t.Error("the other class's launch templates were deleted too")
	}
	// Deleted templates are created again on the next launch.
	ensure(t, env, env.LaunchTemplates, "default")
	out, err := env.EC2.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, lt := range out.LaunchTemplates {
		for _, tag := range lt.Tags {
			if aws.ToString(tag.Key) == "karpenter.k8s.aws/ec2nodeclass" && aws.ToString(tag.Value) == "default" {
				n++
			}
		}
	}
	if n == 0 {
		t.Error("no launch template of the class after a new launch")
	}
}
