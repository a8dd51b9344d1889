package launchtemplate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/apimachinery/pkg/api/resource"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"

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
	launches, err := p.EnsureAll(context.Background(), nc, claim, env.InstanceTypesFor(t, nc, claim), "on-demand", "", env.Tags(nc, claim))
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
	if b := userDataBytes(t, "default"); b <= 0 {
		t.Errorf("karpenter_ec2nodeclasses_userdata_bytes{nodeclass=default} %v after a launch template was created, want its size", b)
	}
	nc := env.NodeClass(t, "default")
	if err := env.LaunchTemplates.DeleteAll(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if b := userDataBytes(t, "default"); b != -1 {
		t.Errorf("the deleted class keeps a user data size series (%v)", b)
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

// The class's connectionTracking, enclaveOptions, cpuOptions, ipPrefixCount and an EBS
// volume's volumeInitializationRate reach CreateLaunchTemplate, and a class
// without them keeps the template it had.
func TestClassLaunchOptionsReachTheTemplate(t *testing.T) {
	env := launchtest.New(t)
	plain := ensure(t, env, env.LaunchTemplates, "default")

	nc := env.NodeClass(t, "options")
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(3600), UDPStreamTimeout: aws.Int32(90), UDPTimeout: aws.Int32(45)}
	nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: false}
	nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: aws.String("disabled")}
	nc.Spec.IPPrefixCount = aws.Int32(3)
	size := resource.MustParse("40Gi")
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{
		DeviceName: aws.String("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &size, VolumeType: aws.String("gp3"), SnapshotID: aws.String("snap-0123456789abcdef0"), VolumeInitializationRate: aws.Int32(250)},
	}}
	claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	claim.Spec.NodeClassRef.Name = nc.Name
	launches, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, env.InstanceTypesFor(t, nc, claim), "on-demand", "", env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Name == plain[0].Name {
		t.Fatalf("classes with and without launch options share template %s", plain[0].Name)
	}
	var data map[string]string
	for _, lt := range env.Emulator.LaunchTemplates() {
		if lt.Name == launches[0].Name {
			data = lt.Data
		}
	}
	want := map[string]string{
		"EnclaveOptions.Enabled":          "false",
		"CpuOptions.NestedVirtualization": "disabled",
		"NetworkInterface.1.ConnectionTrackingSpecification.TcpEstablishedTimeout": "3600",
		"NetworkInterface.1.ConnectionTrackingSpecification.UdpStreamTimeout":      "90",
		"NetworkInterface.1.ConnectionTrackingSpecification.UdpTimeout":            "45",
		"NetworkInterface.1.DeviceIndex":                                           "0",
		"NetworkInterface.1.Ipv4PrefixCount":                                       "3",
		"BlockDeviceMapping.1.Ebs.VolumeInitializationRate":                        "250",
		"BlockDeviceMapping.1.Ebs.SnapshotId":                                      "snap-0123456789abcdef0",
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("launch template %s = %q, want %q (data %v)", k, data[k], v, data)
		}
	}
	// The security groups moved onto the interface with the timeouts.
	if data["NetworkInterface.1.SecurityGroupId.1"] == "" || data["SecurityGroupId.1"] != "" {
		t.Errorf("security groups: want them on the network interface only, data %v", data)
	}

	// The template launches.
	inst, err := env.Instances.Create(context.Background(), nc, claim, env.Tags(nc, claim), env.InstanceTypesFor(t, nc, claim))
	if err != nil || inst == nil {
		t.Fatalf("launch with the options: %v", err)
	}
}

// userDataBytes reads karpenter_ec2nodeclasses_userdata_bytes of a class; -1
// when it has no series.
func userDataBytes(t *testing.T, class string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_ec2nodeclasses_userdata_bytes" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == class {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// Tenancy is part of a template: a dedicated launch gets a template of its
// own with Placement.Tenancy dedicated, while default tenancy keeps the name
// a template had before tenancy was recorded (no churn on upgrade).
func TestTenancyMakesTemplatesOfTheirOwn(t *testing.T) {
	lt := &amifamily.LaunchTemplate{ImageID: "ami-1", UserData: "x"}
	unset := launchtemplate.Name(lt)
	lt.Tenancy = awsv1.InstanceTenancyDefault
	if launchtemplate.Name(lt) != unset {
		t.Errorf("default tenancy renamed the template: %s, was %s", launchtemplate.Name(lt), unset)
	}
	lt.Tenancy = awsv1.InstanceTenancyDedicated
	if launchtemplate.Name(lt) == unset {
		t.Errorf("dedicated and default tenancy share the name %s", unset)
	}

	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large")
	its := env.InstanceTypesFor(t, nc, claim)
	shared, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, its, "on-demand", "", env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	dedicated, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, its, "on-demand", awsv1.InstanceTenancyDedicated, env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	if shared[0].Name == dedicated[0].Name || shared[0].ID == dedicated[0].ID {
		t.Fatalf("shared and dedicated launches share template %s", shared[0].Name)
	}
	if shared[0].Tenancy != "default" || dedicated[0].Tenancy != "dedicated" {
		t.Errorf("launch tenancies %q and %q, want default and dedicated", shared[0].Tenancy, dedicated[0].Tenancy)
	}
	want := map[string]string{shared[0].ID: "default", dedicated[0].ID: "dedicated"}
	for _, lt := range env.Emulator.LaunchTemplates() {
		if w, ok := want[lt.ID]; ok && lt.Tenancy() != w {
			t.Errorf("template %s Placement.Tenancy %q, want %q", lt.Name, lt.Tenancy(), w)
		}
	}
	// Each is reused by launches of its tenancy.
	again, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, its, "on-demand", awsv1.InstanceTenancyDedicated, env.Tags(nc, claim))
	if err != nil || again[0].ID != dedicated[0].ID || env.Emulator.Calls("ec2", "CreateLaunchTemplate") != 2 {
		t.Errorf("dedicated template not reused: %v, %d creates", err, env.Emulator.Calls("ec2", "CreateLaunchTemplate"))
	}
}
